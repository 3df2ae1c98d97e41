"""Models of the 3D Layout capability (the published Build-A-Scene stack, loaded when present), and the settings
each uses where a request leaves them empty (torch-free: the tab shows them)."""

from dataclasses import dataclass

from backends.common.registry import ModelSpec, fp16_variant

# Every file load_sd_controlnet reads (diffusers' repo layout of each component; weights as safetensors),
# so a download fetches them all and a folder with only the configs does not count as present.
_SD_FILES = ("model_index.json", "scheduler/scheduler_config.json",
             "unet/config.json", "unet/diffusion_pytorch_model.safetensors",
             "vae/config.json", "vae/diffusion_pytorch_model.safetensors",
             "text_encoder/config.json", "text_encoder/model.safetensors",
             "tokenizer/merges.txt", "tokenizer/special_tokens_map.json", "tokenizer/tokenizer_config.json",
             "tokenizer/vocab.json")

SPECS = [
    ModelSpec(
        id="layout3d-embedded", capability="layout3d", kind="bas-embedded", source="embedded",
        location="layout3d-embedded",
        files=("scheduler/scheduler_config.json", "text_encoder/config.json", "text_encoder/model.safetensors", "tokenizer/tokenizer.json", "tokenizer/tokenizer_config.json", "unet/config.json", "unet/diffusion_pytorch_model.safetensors", "vae/config.json", "vae/diffusion_pytorch_model.safetensors"),
        sha256={
    "scheduler/scheduler_config.json": "28d1a009dfa466938be057413130d37105fb555c44c7c403af4cbdb4c3194f5c",
    "text_encoder/config.json": "ca83afa892c506fdd1de80d1288066f14ddbb6a29157ebc731a9caae0d0fff59",
    "text_encoder/model.safetensors": "e68defac1e8628cdbfe900d3c440bea53489ecf71a9da1fe0d2561f6cc4841ff",
    "tokenizer/tokenizer.json": "0947282186a983607621e57d3bff59252a3237cf21a62b45a7333a296e312b2c",
    "tokenizer/tokenizer_config.json": "ae28a7637befd687dac2c4bd5e6891bc6190de7cd5d6b442b437ce96194d4fe4",
    "unet/config.json": "4c853e6e87ca58b73716c0e08cc6d343c5ba8155abe1b4f05a98f22b0a4003f4",
    "unet/diffusion_pytorch_model.safetensors": "2f66774a90db57a3d9352023a7bc3e2eac4821ca0bc476444d417ab32cecb5fc",
    "vae/config.json": "f4fa7e6e6bf0d55c1a35910d3f2095ba27cd44fa775e9d9f29afb1424485e15a",
    "vae/diffusion_pytorch_model.safetensors": "00fd9d9e6a481bd6f11c28760f7b30d97d14371a8d6d11a7ca4f7384faa4e0c2",
        },
        license="Apache-2.0 (trained by this project)",
        description=("64×64 text- and box-depth-conditioned latent diffusion model of the primitive world: "
                     "AutoencoderKL + UNet2DConditionModel + CLIPTextModel (training/layout3d_model.py)."),
    ),
    ModelSpec(
        id="layout3d-detector", capability="layout3d", kind="classifier", source="embedded",
        location="layout3d-detector", files=("config.json", "model.safetensors"),
        sha256={
            "config.json": "5f1916ace0e73bb5ae3f71f2523b9bc0fd77803209601363d5afc09e45ce8689",
            "model.safetensors": "4781e35a11b533ef4103258847b225d7a875f0482244e9a7b3a5d9898e00947d",
        },
        license="Apache-2.0 (trained by this project)",
        description="Evaluation detector: shape × colour (or nothing) of a box crop (training/layout3d_detector.py).",
    ),
    ModelSpec(
        id="sd15", capability="layout3d", kind="diffusers-pipeline", source="hf",
        location="stable-diffusion-v1-5/stable-diffusion-v1-5", files=_SD_FILES, fp16_files=fp16_variant(_SD_FILES),
        license="CreativeML OpenRAIL-M",
        description="Stable Diffusion 1.5, the base model of Build-A-Scene (DDIM 20 steps, CFG 7.5).",
    ),
    ModelSpec(
        id="controlnet-sd15-depth", capability="layout3d", kind="controlnet", source="hf",
        location="lllyasviel/control_v11f1p_sd15_depth", files=("config.json", "diffusion_pytorch_model.safetensors"),
        fp16_files=("config.json", "diffusion_pytorch_model.fp16.safetensors"),
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
# The registered models each choice loads (load_for): what a Download beside the choice fetches.
MODEL_PARTS = {"sd15": ("sd15", "controlnet-sd15-depth"),
               "sd15-loosecontrol": ("sd15", "controlnet-sd15-depth", "loose-control-3dbox")}


@dataclass(frozen=True)
class ModelDefaults:
    size: int
    guidance_scale: float
    num_inference_steps: int = 20
    blend_fraction: float = 0.9  # the published default


# The tiny embedded model changes more in the free harmonising steps than SD does: blending 19 of 20
# steps keeps earlier objects at 31.4 dB instead of 28.5 dB (8 bench episodes, box-1 crop PSNR). Blending
# all 20 keeps them at 40.3 dB but gets fewer boxes right on the full bench (0.80 vs 0.84 of 96; crowded
# 0.57 vs 0.56 of 144, though 0.69 vs 0.64 on 48 selection episodes), so 19 of 20 stays.
EMBEDDED_DEFAULTS = ModelDefaults(size=64, guidance_scale=5.0, blend_fraction=0.95)
SD_DEFAULTS = ModelDefaults(size=512, guidance_scale=7.5)
# what each choice uses where a request leaves CFG or the blended fraction empty (``loading.load_for``)
MODEL_DEFAULTS = {DEFAULT_MODEL: EMBEDDED_DEFAULTS, "sd15": SD_DEFAULTS, "sd15-loosecontrol": SD_DEFAULTS}
