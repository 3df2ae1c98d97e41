"""Models of the Counterfactual capability (the published RCSB checkpoints, loaded when present)."""

from backends.common.registry import ModelSpec

SPECS = [
    ModelSpec(
        id="i2sb-imagenet-freeform", capability="counterfactual", kind="i2sb-adm-unet", source="local",
        location="rcsb/imagenet/freeform_20_30", files=("latest.pt",),
        license="NVIDIA non-commercial (I2SB); check NVlabs/I2SB's LICENSE",
        description="I2SB free-form inpainting bridge on ImageNet 256² (ADM U-Net), the RCSB sampler's network.",
        how_to_get=("download the checkpoint archive linked from the README of github.com/sobieskibj/rcsb and "
                    "unpack freeform_20_30/latest.pt into <models_dir>/rcsb/imagenet/freeform_20_30/."),
    ),
]
