"""Fixtures of the diffusers-format real models, built with the authors' classes from the repos' configs.

    python -m training.published_formats.diffusers_models [--authors-code DIR]

Writes ``assets/published-formats/<model-id>.json.gz`` for ``sd15``, ``controlnet-sd15-depth``,
``sdxl-base``, ``sd3-medium`` and ``if-stage1``: per component (named as the repo's subfolder; the
ControlNet repo keeps its model at the root, named ``controlnet`` here) the names and shapes its
weights file holds at full size. These repos were written by diffusers' and transformers'
``save_pretrained``, so their classes are the authors' code: each component is built on the meta device
with the class the repo's own metadata names (``model_index.json``; the ControlNet config's
``_class_name``) from the repo's ``config.json``, and the names are its ``state_dict`` less the tied
weights ``save_pretrained`` leaves out (T5's ``encoder.embed_tokens.weight`` = ``shared.weight``), in the
naming of the library version that wrote the file (``as_written``: the version each config records, where
that version's source, checked, names them otherwise than today's classes).

The configs (and where each was copied from; there is no hub here) are committed under
``assets/published-formats/configs/<repo>/`` with ``SOURCES.json``. ``--authors-code DIR`` puts
``DIR/diffusers/src`` and ``DIR/transformers/src`` (checkouts of huggingface/diffusers and
huggingface/transformers) first on the import path; without it the installed packages are used. The
versions used are recorded in each fixture's ``source``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from backends.common.published_formats import ASSETS, PublishedFormat, shapes_of, write_fixture

CONFIGS = ASSETS / "configs"

# model id -> (repo, components the project loads); components are the repo's subfolders
MODELS: dict[str, tuple[str, tuple[str, ...]]] = {
    "sd15": ("stable-diffusion-v1-5/stable-diffusion-v1-5", ("unet", "vae", "text_encoder")),
    "controlnet-sd15-depth": ("lllyasviel/control_v11f1p_sd15_depth", ("controlnet",)),
    "sdxl-base": ("stabilityai/stable-diffusion-xl-base-1.0", ("unet", "vae", "text_encoder", "text_encoder_2")),
    "sd3-medium": ("stabilityai/stable-diffusion-3-medium-diffusers",
                   ("transformer", "vae", "text_encoder", "text_encoder_2", "text_encoder_3")),
    "if-stage1": ("DeepFloyd/IF-I-XL-v1.0", ("unet", "text_encoder")),
}


def sources() -> dict:
    return json.loads((CONFIGS / "SOURCES.json").read_text())


def component_folder(repo: str, component: str) -> Path:
    return CONFIGS / repo if component == "controlnet" else CONFIGS / repo / component


def published_class(repo: str, component: str) -> tuple[str, str]:
    """(library, class) the repo's metadata names for a component."""
    if component == "controlnet":
        return "diffusers", json.loads((CONFIGS / repo / "config.json").read_text())["_class_name"]
    library, name = json.loads((CONFIGS / repo / "model_index.json").read_text())[component]
    return library, name


def build(library: str, name: str, folder: Path):
    """The authors' class from its config, on the meta device (no memory for the weights)."""
    import torch

    if library == "diffusers":
        import diffusers

        cls = getattr(diffusers, name)
        with torch.device("meta"):
            return cls.from_config(cls.load_config(folder))
    import transformers

    cls = getattr(transformers, name)
    config = transformers.AutoConfig.from_pretrained(folder)
    with torch.device("meta"):
        return cls(config)


def saved_names(model) -> dict[str, tuple[int, ...]]:
    """What ``save_pretrained`` writes: the state dict less tied copies."""
    tied = set(getattr(model, "all_tied_weights_keys", None) or {})
    return {k: s for k, s in shapes_of(model.state_dict()).items() if k not in tied}


def _version(text: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in (text or "0").split(".")[:2] if p.isdigit())


# diffusers before the attention refactor saved a VAE mid-block attention as AttentionBlock (diffusers 0.6.0,
# models/attention.py: group_norm, query, key, value, proj_attn); today's Attention names the same tensors:
_OLD_ATTENTION = {"to_q": "query", "to_k": "key", "to_v": "value", "to_out.0": "proj_attn"}


def as_written(model, library: str, name: str, folder: Path) -> dict[str, tuple[int, ...]]:
    """The names the library version that wrote the repo's file gave, where they differ from today's save.

    * transformers 4.x ``CLIPTextModel`` held its layers under ``self.text_model`` (4.22.0 and 4.32.0
      ``modeling_clip.py``), so every key starts ``text_model.`` (transformers 5 drops it and maps it back on
      load); before 4.31 it also saved ``text_model.embeddings.position_ids`` (4.22.0: a persistent buffer,
      "exported when serialized"; 4.32.0: ``persistent=False``);
    * diffusers before 0.15 saved VAE attention blocks as ``query/key/value/proj_attn``.
    """
    names = saved_names(model)
    config = json.loads((folder / "config.json").read_text())
    if library == "transformers" and name == "CLIPTextModel" and _version(config.get("transformers_version"))[0] == 4:
        names = {f"text_model.{k}": s for k, s in names.items()}
        if _version(config["transformers_version"]) < (4, 31):
            names["text_model.embeddings.position_ids"] = (1, config["max_position_embeddings"])
    if library == "diffusers" and _version(config.get("_diffusers_version")) < (0, 15):
        old = [n for n, m in model.named_modules() if getattr(m, "_from_deprecated_attn_block", False)]
        renamed = {}
        for key, shape in names.items():
            for path in old:
                for new, legacy in _OLD_ATTENTION.items():
                    if key.startswith(f"{path}.{new}."):
                        key = f"{path}.{legacy}.{key[len(path) + len(new) + 2:]}"
            renamed[key] = shape
        names = renamed
    return names


def fixture(model_id: str) -> PublishedFormat:
    import diffusers
    import transformers

    repo, components = MODELS[model_id]
    built, classes = {}, []
    for comp in components:
        library, name = published_class(repo, comp)
        folder = component_folder(repo, comp)
        built[comp] = as_written(build(library, name, folder), library, name, folder)
        classes.append(f"{comp}: {library}.{name}")
    info = sources()["repos"][repo]
    source = (f"{repo} configs ({info['source']}); built with diffusers {diffusers.__version__} / transformers "
              f"{transformers.__version__}: {', '.join(classes)}")
    return PublishedFormat(model_id, source, built, info.get("notes", ""))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--authors-code", type=Path, default=None,
                        help="folder with diffusers/src and transformers/src checkouts (default: installed packages)")
    parser.add_argument("--models", nargs="*", default=list(MODELS))
    args = parser.parse_args(argv)
    if args.authors_code is not None:
        for sub in ("transformers/src", "diffusers/src"):
            sys.path.insert(0, str(args.authors_code / sub))
    for model_id in args.models:
        fmt = fixture(model_id)
        path = write_fixture(fmt)
        print(f"{model_id}: {fmt.count()} tensors in {len(fmt.components)} components -> {path.name}")


if __name__ == "__main__":
    main()
