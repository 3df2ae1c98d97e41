"""Models of the 3D Layout capability (the published Build-A-Scene stack, loaded when present)."""

from backends.common.registry import ModelSpec

_SD_FILES = ("model_index.json", "unet/config.json", "vae/config.json", "text_encoder/config.json",
             "tokenizer/vocab.json", "scheduler/scheduler_config.json")

SPECS = [
    ModelSpec(
        id="layout3d-detector", capability="layout3d", kind="classifier", source="embedded",
        location="layout3d-detector", files=("config.json", "model.safetensors"),
        sha256={
            "config.json": "5f1916ace0e73bb5ae3f71f2523b9bc0fd77803209601363d5afc09e45ce8689",
            "model.safetensors": "ae0ed03b0d4641c58fe64c9ba7c880e3b93e8f358121481ba794966f810d7088",
        },
        license="Apache-2.0 (trained by this project)",
        description="Evaluation detector: shape × colour (or nothing) of a box crop (training/layout3d_detector.py).",
    ),
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

DEFAULT_MODEL = "layout3d-embedded"
MODEL_CHOICES = (DEFAULT_MODEL, "sd15", "sd15-loosecontrol")
