"""Models of the Text in Image capability (the paper's real diffusion models, loaded when present)."""

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
]
