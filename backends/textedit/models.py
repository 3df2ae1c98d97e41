"""Models of the Text in Image capability (the paper's real diffusion models, loaded when present).

``PRESETS`` holds, per model, the sampling settings of the reference scripts and the layers the paper
localized (``py-xis/t2i: src/edit_*.py``): layer names, or execution indices where the module name
is not confirmed (IF: attention 17 of the 22 added-K/V attentions of stage I).
"""

from dataclasses import dataclass

from backends.common.registry import ModelSpec

SPECS = [
    ModelSpec(
        id="sdxl-base", capability="textedit", kind="diffusers-pipeline", source="hf",
        location="stabilityai/stable-diffusion-xl-base-1.0",
        files=("model_index.json", "unet/config.json", "vae/config.json", "scheduler/scheduler_config.json"),
        license="CreativeML OpenRAIL++-M",
        description="SDXL base 1.0; its text layers are up_blocks.0.attentions.2.transformer_blocks.{1,2,3}.attn2.",
    ),
    ModelSpec(
        id="sd3-medium", capability="textedit", kind="diffusers-pipeline", source="hf",
        location="stabilityai/stable-diffusion-3-medium-diffusers",
        files=("model_index.json", "transformer/config.json", "vae/config.json", "scheduler/scheduler_config.json"),
        license="Stability AI Community License (gated)",
        description="Stable Diffusion 3 medium (28 steps, CFG 7.0), joint-attention text layers.",
    ),
    ModelSpec(
        id="if-stage1", capability="textedit", kind="diffusers-pipeline", source="hf",
        location="DeepFloyd/IF-I-XL-v1.0",
        files=("model_index.json", "unet/config.json", "text_encoder/config.json", "scheduler/scheduler_config.json"),
        license="DeepFloyd IF License (gated)",
        description="DeepFloyd IF stage I (64×64 pixels, 50 steps, CFG 7.0); its text layer is added-K/V attention 17.",
    ),
]

DEFAULT_MODEL = "textedit-embedded"


@dataclass(frozen=True)
class Preset:
    """Sampling settings and the localized layers of one model."""

    num_inference_steps: int
    guidance_scale: float
    edit_layers: tuple[str, ...]  # names or execution indices; () = not measured: run Localize first
    edit_start_step: int
    toxic_layers: tuple[str, ...]
    toxic_start_step: int
    source: str  # where the layers come from


PRESETS = {
    "sdxl-base": Preset(50, 5.0, ("up_blocks.0.attentions.2.transformer_blocks.1.attn2",
                                  "up_blocks.0.attentions.2.transformer_blocks.2.attn2"), 4,
                        ("up_blocks.0.attentions.2.transformer_blocks.1.attn2",
                         "up_blocks.0.attentions.2.transformer_blocks.2.attn2",
                         "up_blocks.0.attentions.2.transformer_blocks.3.attn2"), 4,
                        "the paper (SDXL layers 55, 56; 57 added for toxic text)"),
    "sd3-medium": Preset(28, 7.0, ("transformer_blocks.10.attn",), 2, ("transformer_blocks.10.attn",), 0,
                         "the paper (SD3 joint block 10, text K/V only)"),
    "if-stage1": Preset(50, 7.0, ("17",), 2, ("17",), 2, "the paper (IF stage I attention 17 of 22)"),
    DEFAULT_MODEL: Preset(20, 5.0, (), 2, (), 2, "not measured yet: run Localize"),
}

MODEL_CHOICES = (DEFAULT_MODEL, "sdxl-base", "sd3-medium", "if-stage1")
