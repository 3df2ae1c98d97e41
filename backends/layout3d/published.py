"""What the 3D Layout loader takes from the published SD 1.5 and depth ControlNet repos, at full size.

``expected_format(model_id)`` builds, on the meta device, every component ``load_sd_controlnet`` loads —
with the classes it loads them with (``loading.sd_classes``) from the repo's ``config.json`` as
``from_pretrained`` reads it — and lists which of the published checkpoint's names
(``assets/published-formats/<model-id>.json.gz``) its loader takes, renamed as ``from_pretrained`` renames
them, with the shape of the tensor each lands on, and the model's tensors none fills
(``published_build.loader_view``): ``compare_format`` with the fixture then says what the loader would
leave in the file, leave unfilled or refuse for its shape.
"""

from __future__ import annotations

from backends.common.published_build import build_meta, config_folder, loader_view
from backends.common.published_formats import Format, read_fixture

from .models import SPECS

# model id -> the repo subfolders load_sd_controlnet reads ("" = the repo root, named "controlnet")
COMPONENTS = {"sd15": ("unet", "vae", "text_encoder"), "controlnet-sd15-depth": ("controlnet",)}
PUBLISHED_MODELS: tuple[str, ...] = (*COMPONENTS, "loose-control-3dbox")
LOOSE_CONTROL_RANK = 8  # the rank the fixture was recorded at (see training/published_formats/loose_control.py)


def expected_format(model_id: str) -> Format:
    from .loading import sd_classes

    if model_id == "loose-control-3dbox":
        return {"lora": loose_control_lora(LOOSE_CONTROL_RANK)}
    if model_id not in COMPONENTS:
        raise KeyError(f"{model_id!r} is not a published 3D Layout model; one of {PUBLISHED_MODELS}")
    repo = next(s.location for s in SPECS if s.id == model_id)
    classes, published = sd_classes(), read_fixture(model_id).components
    out = {}
    for comp in COMPONENTS[model_id]:
        folder = config_folder(repo) if comp == "controlnet" else config_folder(repo, comp)
        out[comp] = loader_view(build_meta(classes[comp], folder), published.get(comp, {}))
    return out


def loose_control_lora(rank: int) -> dict:
    """The LoRA keys ``merge_attn_procs_lora`` takes for the depth ControlNet: four projections of every
    attention layer, in ``load_attn_procs``' processor form, merged into a meta-device ControlNet (so a key
    or shape it would refuse fails here)."""
    import torch
    from torch import nn

    from .loading import merge_attn_procs_lora, sd_classes

    repo = next(s.location for s in SPECS if s.id == "controlnet-sd15-depth")
    controlnet = build_meta(sd_classes()["controlnet"], config_folder(repo))
    projections = {"to_q": "to_q", "to_k": "to_k", "to_v": "to_v", "to_out": "to_out.0"}
    shapes = {}
    for name, module in controlnet.named_modules():
        if name.endswith((".attn1", ".attn2")):
            for short, path in projections.items():
                lin = module.get_submodule(path)
                assert isinstance(lin, nn.Linear)
                shapes[f"{name}.processor.{short}_lora.down.weight"] = (rank, lin.in_features)
                shapes[f"{name}.processor.{short}_lora.up.weight"] = (lin.out_features, rank)
    state = {k: torch.empty(s, device="meta") for k, s in shapes.items()}
    merge_attn_procs_lora(controlnet, state)
    return shapes
