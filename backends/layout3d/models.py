"""Models of the 3D Layout capability (the published Build-A-Scene stack, loaded when present)."""

from backends.common.registry import ModelSpec

_SD_FILES = ("model_index.json", "unet/config.json", "vae/config.json", "text_encoder/config.json",
             "tokenizer/vocab.json", "scheduler/scheduler_config.json")

SPECS = [
    ModelSpec(
        id="sd15", capability="layout3d", kind="diffusers-pipeline", source="hf",
        location="stable-diffusion-v1-5/stable-diffusion-v1-5", files=_SD_FILES,
        license="CreativeML OpenRAIL-M",
        description="Stable Diffusion 1.5, the base model of Build-A-Scene (DDIM 20 steps, CFG 7.5).",
    ),
    ModelSpec(
        id="controlnet-sd15-depth", capability="layout3d", kind="controlnet", source="hf",
        location="lllyasviel/control_v11f1p_sd15_depth", files=("config.json",),
        license="OpenRAIL", size_mb=1380,
        description="ControlNet v1.1 depth for SD 1.5, the depth condition of Build-A-Scene.",
    ),
    ModelSpec(
        id="loose-control-3dbox", capability="layout3d", kind="controlnet-lora", source="hf",
        location="shariqfarooq/loose-control-3dbox", files=("pytorch_lora_weights.safetensors",),
        license="see the model card of shariqfarooq/loose-control-3dbox",
        description="LooseControl 3D-box LoRA on the depth ControlNet: boxes as a loose depth proxy.",
    ),
]
