"""What the Text in Image loader takes from the published SDXL, SD3 medium and IF stage I repos, at full size.

``load_published`` hands the repo folder to a diffusers pipeline class (``loading.PIPELINES``), which loads
every component ``model_index.json`` lists except those it is given (IF's safety checker and watermarker:
``loading.PIPELINE_KWARGS``). ``expected_format(model_id)`` builds, on the meta device, each such
component that holds weights — as the class the pipeline declares for it, from the repo's ``config.json``
read as ``from_pretrained`` reads it — and lists which of the published checkpoint's names
(``assets/published-formats/<model-id>.json.gz``) its loader takes, renamed as ``from_pretrained`` renames
them, with the shape of the tensor each lands on, plus the model's tensors none fills
(``published_build.loader_view``), so ``compare_format`` with the fixture shows any difference.
"""

from __future__ import annotations

import json

import torch

from backends.common.published_build import CONFIGS, build_meta, config_folder, loader_view
from backends.common.published_formats import Format, read_fixture

from .models import SPECS

PUBLISHED_MODELS: tuple[str, ...] = ("sdxl-base", "sd3-medium", "if-stage1")


def repo_of(model_id: str) -> str:
    if model_id not in PUBLISHED_MODELS:
        raise KeyError(f"{model_id!r} is not a published Text in Image model; one of {PUBLISHED_MODELS}")
    return next(s.location for s in SPECS if s.id == model_id)


def loaded_components(model_id: str) -> dict[str, type]:
    """Component -> the class the pipeline declares for it, for the weight-holding components it loads."""
    from .loading import PIPELINE_KWARGS, pipeline_class

    cls = pipeline_class(model_id)
    listed = json.loads((CONFIGS / repo_of(model_id) / "model_index.json").read_text())
    given = PIPELINE_KWARGS.get(model_id, {})
    out = {}
    for name, types in cls._get_signature_types().items():
        if name not in listed or name.startswith("_") or name in given:
            continue
        module = next((t for t in types if isinstance(t, type) and issubclass(t, torch.nn.Module)), None)
        if module is not None:
            out[name] = module
    return out


def expected_format(model_id: str) -> Format:
    repo, published = repo_of(model_id), read_fixture(model_id).components
    return {name: loader_view(build_meta(cls, config_folder(repo, name)), published.get(name, {}))
            for name, cls in loaded_components(model_id).items()}


def build_denoiser(model_id: str) -> torch.nn.Module:
    """The full-size UNet / SD3 transformer on the meta device (for checking the presets' layer names)."""
    name = "transformer" if model_id == "sd3-medium" else "unet"
    return build_meta(loaded_components(model_id)[name], config_folder(repo_of(model_id), name))
