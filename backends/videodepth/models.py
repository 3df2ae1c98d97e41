"""Models of the Video Depth capability (the published Depth Any Video weights, loaded when present)."""

from backends.common.registry import ModelSpec

SPECS = [
    ModelSpec(
        id="depth-any-video", capability="videodepth", kind="diffusers-components", source="hf",
        location="hhyangcs/depth-any-video",
        files=("unet/config.json", "unet_interp/config.json", "vae/config.json", "scheduler/scheduler_config.json"),
        license="CC BY-NC 4.0",
        description="Depth Any Video: SVD VAE, flow-matching UNet with RoPE, and the key-frame interpolation UNet.",
    ),
]
