"""Models of the Counterfactual capability: the embedded defaults and the published RCSB checkpoint."""

from backends.common.registry import ModelSpec

DEFAULT_BRIDGE = "counterfactual-bridge"
DEFAULT_CLASSIFIER = "counterfactual-classifier"
REAL_BRIDGE, REAL_CLASSIFIER = "i2sb-imagenet-freeform", "resnet50-imagenet"
BRIDGE_KINDS = ("i2sb-unet2d", "i2sb-adm-unet")
CLASSIFIER_KINDS = ("classifier", "torchvision-classifier")

SPECS = [
    ModelSpec(
        id="counterfactual-classifier", capability="counterfactual", kind="classifier", source="embedded",
        location="counterfactual-classifier", files=("config.json", "model.safetensors"),
        sha256={
            "config.json": "faf0ac5b6e42445a79976dfa932a27f571e468f622a74faea55569800779866e",
            "model.safetensors": "ba3e33ded8cdfc6fc2547c4390fa2b69da69006013de62cc79fd59a5045856bb",
        },
        license="Apache-2.0 (trained by this project)",
        description="Small CNN naming the shape in 32×32 primitive-world images (training/counterfactual_classifier.py).",
    ),
    ModelSpec(
        id="counterfactual-bridge", capability="counterfactual", kind="i2sb-unet2d", source="embedded",
        location="counterfactual-bridge", files=("config.json", "diffusion_pytorch_model.safetensors"),
        sha256={
            "config.json": "b639c0b51ec203e9039c56e4a433affb8e15cf0e41856449e0241416f51de0c6",
            "diffusion_pytorch_model.safetensors": "9dbe268c8b979015a5a722096a8a38a4a792e317a47206da8d1f0d252cde7ec6",
        },
        license="Apache-2.0 (trained by this project)",
        description="32×32 I2SB free-form inpainting bridge (diffusers UNet2DModel) (training/counterfactual_bridge.py).",
    ),
    ModelSpec(
        id="i2sb-imagenet-freeform", capability="counterfactual", kind="i2sb-adm-unet", source="local",
        location="rcsb/imagenet/freeform_20_30", files=("latest.pt",),
        license="NVIDIA non-commercial (I2SB); check NVlabs/I2SB's LICENSE",
        description="I2SB free-form inpainting bridge on ImageNet 256² (ADM U-Net), the RCSB sampler's network.",
        how_to_get=("download the checkpoint archive linked from the README of github.com/sobieskibj/rcsb and "
                    "unpack freeform_20_30/latest.pt into <models_dir>/rcsb/imagenet/freeform_20_30/."),
    ),
    ModelSpec(
        id="resnet50-imagenet", capability="counterfactual", kind="torchvision-classifier", source="local",
        location="torchvision/resnet50", files=("resnet50.pth",),
        license="BSD-3-Clause (torchvision); ImageNet weights for non-commercial research",
        description="torchvision ResNet-50 ImageNet classifier, the classifier RCSB's ImageNet pairs are judged by.",
        how_to_get=("download torchvision's ImageNet weights (a state dict), "
                    "https://download.pytorch.org/models/resnet50-11ad3fa6.pth (IMAGENET1K_V2), and save the file "
                    "as <models_dir>/torchvision/resnet50/resnet50.pth; torchvision itself is not needed."),
    ),
]


def default_models() -> tuple[str, str]:
    """The bridge and classifier a new session starts with: the published ones when both are present here
    (``REAL_BRIDGE``, ``REAL_CLASSIFIER``), else the embedded ones. Torch-free, so the tab can ask at build time."""
    from backends.common.registry import default_registry, model_status

    registry = default_registry()
    try:
        if all(model_status(registry.get(i)).present for i in (REAL_BRIDGE, REAL_CLASSIFIER)):
            return REAL_BRIDGE, REAL_CLASSIFIER
    except KeyError:
        pass
    return DEFAULT_BRIDGE, DEFAULT_CLASSIFIER
