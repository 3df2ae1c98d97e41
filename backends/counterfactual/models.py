"""Models of the Counterfactual capability: the embedded defaults and the published RCSB checkpoint."""

from backends.common.registry import ModelSpec

SPECS = [
    ModelSpec(
        id="counterfactual-classifier", capability="counterfactual", kind="classifier", source="embedded",
        location="counterfactual-classifier", files=("config.json", "model.safetensors"),
        sha256={
            "config.json": "faf0ac5b6e42445a79976dfa932a27f571e468f622a74faea55569800779866e",
            "model.safetensors": "ba3e33ded8cdfc6fc2547c4390fa2b69da69006013de62cc79fd59a5045856bb",
        },
        license="Apache-2.0 (trained by this project)", default=True,
        description="Small CNN naming the shape in 32×32 primitive-world images (training/counterfactual_classifier.py).",
    ),
    ModelSpec(
        id="i2sb-imagenet-freeform", capability="counterfactual", kind="i2sb-adm-unet", source="local",
        location="rcsb/imagenet/freeform_20_30", files=("latest.pt",),
        license="NVIDIA non-commercial (I2SB); check NVlabs/I2SB's LICENSE",
        description="I2SB free-form inpainting bridge on ImageNet 256² (ADM U-Net), the RCSB sampler's network.",
        how_to_get=("download the checkpoint archive linked from the README of github.com/sobieskibj/rcsb and "
                    "unpack freeform_20_30/latest.pt into <models_dir>/rcsb/imagenet/freeform_20_30/."),
    ),
]
