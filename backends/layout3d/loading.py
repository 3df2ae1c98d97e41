"""Build a ``BuildAScenePipeline`` from a registered model: the embedded one or the published stack.

* ``bas-embedded``: one folder with ``vae/ unet/ text_encoder/ tokenizer/ scheduler/`` (fp16 on
  disk, loaded in fp32 on a CPU), box depth by channel concatenation;
* ``sd15`` + ``controlnet-sd15-depth`` (+ ``loose-control-3dbox``): SD 1.5's components, the depth
  ControlNet, and the LooseControl LoRA merged into the ControlNet's attention projections — the
  reference loads it as attention processors (``ControlNetX.load_attn_procs``); merging the
  low-rank update ``W += scale·up·down`` gives the same outputs without a custom class.
"""

from __future__ import annotations

from pathlib import Path

import torch

from backends.common.errors import InputError

from .models import EMBEDDED_DEFAULTS, SD_DEFAULTS, ModelDefaults  # noqa: F401 (re-exported)
from .pipeline import BuildAScenePipeline

SD_PREFIX = "4k, high-res, realistic, "
SD_NEGATIVE = "blurry, text, caption, lowquality, lowresolution, low-res, grainy, ugly"




def load_embedded(folder: Path, device="cpu", dtype=torch.float32, name: str = "layout3d-embedded") -> BuildAScenePipeline:
    from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
    from transformers import CLIPTextModel, PreTrainedTokenizerFast

    folder = Path(folder)
    vae = AutoencoderKL.from_pretrained(folder / "vae", torch_dtype=dtype).to(device)
    unet = UNet2DConditionModel.from_pretrained(folder / "unet", torch_dtype=dtype).to(device)
    text = CLIPTextModel.from_pretrained(folder / "text_encoder", dtype=dtype).to(device)
    tok = PreTrainedTokenizerFast.from_pretrained(folder / "tokenizer")
    sched = DDIMScheduler.from_pretrained(folder / "scheduler")
    return _named(BuildAScenePipeline(vae, text, tok, unet, sched), name)


def sd_classes() -> dict[str, type]:
    """The class each SD 1.5 subfolder (and the ControlNet repo, ``controlnet``) is loaded with; also what
    ``published.expected_format`` builds, so the published-format check follows the loader."""
    from diffusers import AutoencoderKL, ControlNetModel, UNet2DConditionModel
    from transformers import CLIPTextModel

    return {"vae": AutoencoderKL, "unet": UNet2DConditionModel, "text_encoder": CLIPTextModel,
            "controlnet": ControlNetModel}


def load_sd_controlnet(sd_folder: Path, controlnet_folder: Path, lora_file: Path | None = None, device="cpu",
                       dtype=torch.float32, name: str = "sd15+controlnet-depth", sd_variant: str | None = None,
                       controlnet_variant: str | None = None) -> BuildAScenePipeline:
    """SD 1.5 (diffusers folder) + a depth ControlNet (+ LooseControl LoRA file), DDIM as published.

    ``*_variant="fp16"`` reads the repos' fp16 weight files (``*.fp16.safetensors``) where those were downloaded.
    """
    from diffusers import DDIMScheduler
    from transformers import AutoTokenizer

    sd = Path(sd_folder)
    classes = sd_classes()
    vae = classes["vae"].from_pretrained(sd / "vae", torch_dtype=dtype, variant=sd_variant).to(device)
    unet = classes["unet"].from_pretrained(sd / "unet", torch_dtype=dtype, variant=sd_variant).to(device)
    text = classes["text_encoder"].from_pretrained(sd / "text_encoder", dtype=dtype, variant=sd_variant).to(device)
    tok = AutoTokenizer.from_pretrained(sd / "tokenizer")
    controlnet = classes["controlnet"].from_pretrained(controlnet_folder, torch_dtype=dtype,
                                                       variant=controlnet_variant).to(device)
    if lora_file is not None:
        from safetensors.torch import load_file

        merge_attn_procs_lora(controlnet, load_file(str(lora_file)))
    sched = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
                          set_alpha_to_one=False)
    pipe = BuildAScenePipeline(vae, text, tok, unet, sched, controlnet=controlnet, prompt_prefix=SD_PREFIX,
                               negative_prompt=SD_NEGATIVE)
    return _named(pipe, name)


def _named(pipe: BuildAScenePipeline, name: str) -> BuildAScenePipeline:
    """The model id shown in the UI; no tqdm bar (progress goes through ``callback_on_step_end``)."""
    pipe.name = name
    pipe.set_progress_bar_config(disable=True)
    return pipe


def lora_compatible_keys(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The key forms diffusers' ``load_attn_procs`` (0.21–0.24, which LooseControl's ``ControlNetX`` uses)
    accepts, as ``<linear>.lora.{down,up}.weight``: a ``unet.`` prefix on every key is dropped and the
    attention-processor form ``<attn>.processor.to_q_lora.down.weight`` becomes ``<attn>.to_q.lora.down.weight``
    (``to_out_lora`` → ``to_out.0.lora``), as in its ``convert_state_dict_legacy_attn_format``."""
    if state and all(k.startswith("unet.") for k in state):
        state = {k.removeprefix("unet."): v for k, v in state.items()}
    out = {}
    for key, value in state.items():
        if "processor" in key.split("."):
            key = key.replace(".processor", "").replace("to_out_lora", "to_out.0.lora").replace("_lora", ".lora")
        out[key] = value
    return out


@torch.no_grad()
def merge_attn_procs_lora(model: torch.nn.Module, state: dict[str, torch.Tensor], scale: float = 1.0) -> int:
    """Merge a LoRA in ``load_attn_procs`` format (``…attn1.processor.to_q_lora.down.weight`` or
    ``…attn1.to_q.lora.down.weight`` keys) into ``model``'s linear layers: ``W += scale·up·down``, what
    diffusers' ``LoRACompatibleLinear`` adds at run time (no network alpha: ``load_attn_procs`` takes none).

    Returns the number of projections updated; an unknown key, a target the model lacks, a half pair or a
    wrong shape is an error, not silently skipped.
    """
    modules = dict(model.named_modules())
    pairs: dict[str, dict[str, torch.Tensor]] = {}
    for key, value in lora_compatible_keys(state).items():
        parts = key.split(".")
        if len(parts) < 4 or parts[-3] != "lora" or parts[-2] not in ("down", "up") or parts[-1] != "weight":
            raise ValueError(f"not an attention-processor LoRA key: {key}")
        pairs.setdefault(".".join(parts[:-3]), {})[parts[-2]] = value
    for target, w in pairs.items():
        lin = modules.get(target)
        if not isinstance(lin, torch.nn.Linear):
            raise ValueError(f"LoRA targets {target}, which is not a linear layer of the model")
        if set(w) != {"down", "up"}:
            raise ValueError(f"LoRA for {target} has only {sorted(w)}")
        out_f, in_f = lin.weight.shape
        if w["down"].ndim != 2 or w["down"].shape[1] != in_f or tuple(w["up"].shape) != (out_f, w["down"].shape[0]):
            raise ValueError(f"LoRA for {target}: up {tuple(w['up'].shape)} · down {tuple(w['down'].shape)} "
                             f"does not fit a {in_f}→{out_f} layer")
        delta = (w["up"].float() @ w["down"].float()) * scale
        lin.weight += delta.to(lin.weight.dtype)
    return len(pairs)


def load_for(spec_id: str, device="cpu", settings=None) -> tuple[BuildAScenePipeline, ModelDefaults]:
    """Resolve a registered model (and its companions for the SD stack) and build the pipeline."""
    from backends.common.registry import default_registry

    reg = default_registry()
    if spec_id == "layout3d-embedded":
        found = reg.resolve(spec_id, settings)
        return load_embedded(found.path, device), EMBEDDED_DEFAULTS
    if spec_id in ("sd15", "sd15-loosecontrol"):
        sd = reg.resolve("sd15", settings)
        cn = reg.resolve("controlnet-sd15-depth", settings)
        lora = None
        if spec_id == "sd15-loosecontrol":
            lora = reg.resolve("loose-control-3dbox", settings).path / "pytorch_lora_weights.safetensors"
        dtype = torch.float16 if str(device).startswith("cuda") else torch.float32
        return load_sd_controlnet(sd.path, cn.path, lora, device, dtype, name=spec_id, sd_variant=sd.variant,
                                  controlnet_variant=cn.variant), SD_DEFAULTS
    raise InputError(f"Unknown 3D Layout model {spec_id!r}; choose layout3d-embedded, sd15 or sd15-loosecontrol.")
