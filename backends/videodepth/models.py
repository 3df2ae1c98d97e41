"""Models of the Video Depth capability (the published Depth Any Video weights, loaded when present)."""

from backends.common.registry import ModelSpec

REAL_MODEL = "depth-any-video"

SPECS = [
    ModelSpec(
        id="videodepth-embedded", capability="videodepth", kind="videodepth-embedded", source="embedded",
        location="videodepth-embedded",
        files=(
            "model_index.json",
            "scheduler/scheduler_config.json",
            "unet/config.json",
            "unet/diffusion_pytorch_model.safetensors",
            "unet_interp/config.json",
            "unet_interp/diffusion_pytorch_model.safetensors",
            "vae/config.json",
            "vae/diffusion_pytorch_model.safetensors",
        ),
        sha256={
            "model_index.json": "455d0118b012206cbb1547ffdf0437eaa592279a3c2c54b68da2297fbaa7e2d1",
            "scheduler/scheduler_config.json": "b551508c7fc8a1b675c87458fcb5ea64d2b1e3e8492e765f2db8c71f67c7b0c9",
            "unet/config.json": "f5748cad966db30d26999f488f6b93e3dd14dcdc33ff0fcbe35ba241ab9dda09",
            "unet/diffusion_pytorch_model.safetensors": "a1dc07b2ae24433beeb5cba12aa793d60d19e0b79165c5ce8864a57fae32e577",
            "unet_interp/config.json": "fecb6391f412d7a5536db57685a7caee24408e8b2a45200faccb41e8a49a3980",
            "unet_interp/diffusion_pytorch_model.safetensors": "2740a1f7a5d07cbe0348c0853b164f9316d2612c5e55341e71a4da361e314931",
            "vae/config.json": "9615095806c13c3da35280d6313e82170456830d1c06510f27cf975eaa19f266",
            "vae/diffusion_pytorch_model.safetensors": "830fa47e7bedf2f1dd2a4d5d1a8960952677daa3e074b94cc3b0f6174324e87c",
        },
        license="Apache-2.0 (trained by this project)",
        description=("64×64 RoPE spatio-temporal UNet (flow matching, clean-latent prediction) on a space-to-depth "
                     "codec, trained on synthetic primitive-world clips (training/videodepth_model.py)."),
    ),
    ModelSpec(
        id="depth-any-video", capability="videodepth", kind="diffusers-components", source="hf",
        location="hhyangcs/depth-any-video",
        files=("scheduler/scheduler_config.json",
               "unet/config.json", "unet/diffusion_pytorch_model.safetensors",
               "unet_interp/config.json", "unet_interp/diffusion_pytorch_model.safetensors",
               "vae/config.json", "vae/diffusion_pytorch_model.safetensors"),
        license="CC BY-NC 4.0",
        description="Depth Any Video: SVD VAE, flow-matching UNet with RoPE, and the key-frame interpolation UNet.",
    ),
]


def default_model() -> str:
    """The model a new session starts with: Depth Any Video when it is present here, else the embedded one
    (torch-free, so the tab can ask at build time)."""
    from backends.common.registry import default_registry, model_status

    try:
        if model_status(default_registry().get(REAL_MODEL)).present:
            return REAL_MODEL
    except KeyError:
        pass
    return "videodepth-embedded"
