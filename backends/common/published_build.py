"""Build a diffusers / transformers model from a published config the way ``from_pretrained`` does, on the meta device.

The published-format checks (``backends/<capability>/published.py``) build what a loader instantiates at
full size without the weights: the repo's ``config.json`` (committed under
``assets/published-formats/configs/<repo>/``) read as ``from_pretrained`` reads it, the model made under
``torch.device("meta")`` (no memory for its parameters), and the names the loader fills from the weights file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import torch

from .published_formats import ASSETS, Shape, shapes_of

CONFIGS = ASSETS / "configs"


def config_folder(repo: str, subfolder: str = "") -> Path:
    """Where a published repo's (sub)folder config is kept; a missing one is an error, not an empty model."""
    folder = CONFIGS / repo / subfolder if subfolder else CONFIGS / repo
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"no published config for {repo}/{subfolder}: {folder / 'config.json'}")
    return folder


def build_meta(cls, folder: Path):
    """``cls`` from ``folder/config.json`` as its ``from_pretrained`` builds it, parameters on the meta device."""
    if hasattr(cls, "load_config"):  # diffusers ModelMixin: load_config -> from_config(config, **unused)
        config, unused = cls.load_config(folder, return_unused_kwargs=True)
        with torch.device("meta"):
            return cls.from_config(config, **unused)
    config = cls.config_class.from_pretrained(folder)  # transformers PreTrainedModel
    with torch.device("meta"):
        return cls(config)


def loaded_names(model: torch.nn.Module) -> dict[str, Shape]:
    """Names/shapes the loader takes from the weights file: the state dict less tied copies (filled by tying)."""
    tied = set(getattr(model, "all_tied_weights_keys", None) or {})
    return {k: s for k, s in shapes_of(model.state_dict()).items() if k not in tied}


def _renamed(model: torch.nn.Module, keys: list[str]) -> dict[str, str]:
    """checkpoint key -> model key, as the library's ``from_pretrained`` renames them for this model."""
    if hasattr(model, "_fix_state_dict_keys_on_load"):  # diffusers: deprecated attention-block names
        moved = {k: k for k in keys}  # the values travel with the renamed keys
        model._fix_state_dict_keys_on_load(moved)
        return {original: new for new, original in moved.items()}
    from transformers.conversion_mapping import get_model_conversion_mapping
    from transformers.core_model_loading import WeightConverter, WeightRenaming, rename_source_key

    mapping = get_model_conversion_mapping(model)
    renamings = [m for m in mapping if isinstance(m, WeightRenaming)]
    converters = [m for m in mapping if isinstance(m, WeightConverter)]
    meta = model.state_dict()
    out = {}
    for key in keys:  # as convert_and_load_state_dict_in_model does
        new, _ = rename_source_key(key, renamings, converters, model.base_model_prefix, meta)
        if new not in meta and key in meta:
            new, _ = rename_source_key(key, [], [], model.base_model_prefix, meta)
        out[key] = new
    return out


def loader_view(model: torch.nn.Module, published: Mapping[str, Shape]) -> dict[str, Shape]:
    """The names of a published checkpoint that the library's loader takes for ``model``, and what it leaves.

    Each published name is renamed as ``from_pretrained`` renames it (diffusers' deprecated attention
    blocks, transformers' conversion mapping and base-model prefix); one that lands on a tensor of the
    model is listed with the *model's* shape (so a size difference shows), one that lands on a buffer the
    model makes itself (a non-persistent ``position_ids``) is skipped by the loader as harmless and listed
    too. The model's tensors that no published name fills are listed under their own names, so comparing
    this with the published names gives: missing = in the checkpoint, not taken; unexpected = left unfilled.
    """
    state = model.state_dict()
    made = {n: b for n, b in model.named_buffers() if n not in state}
    out, filled = {}, set()
    for key, target in _renamed(model, list(published)).items():
        if target in state:
            out[key] = tuple(state[target].shape)
            filled.add(target)
        elif target in made:
            out[key] = tuple(made[target].shape)
    tied = set(getattr(model, "all_tied_weights_keys", None) or {})
    for name, shape in shapes_of(state).items():
        if name not in filled and name not in tied:
            out.setdefault(name, shape)
    return out
