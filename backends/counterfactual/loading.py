"""Build the bridge and the classifier of a registered model, whatever its kind.

Embedded models (trained by the project) and the published ones (the I2SB ImageNet bridge, ImageNet
classifiers in torchvision's format) come out with the same interfaces: ``bridge(x_n, step, mask) → ε̂`` and
``classifier(images in [0, 1]) → logits`` plus the list of class names.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from backends.common.errors import InputError
from backends.common.registry import ModelSpec

from .data import CLASSES
from .models import BRIDGE_KINDS, CLASSIFIER_KINDS
from .networks import BridgeDenoiser, ShapeClassifier
from .resnet import ARCHITECTURES, imagenet_categories


def load_bridge(spec: ModelSpec, folder: Path) -> tuple[nn.Module, int]:
    """The bridge network and the image size it works at."""
    if spec.kind == "i2sb-unet2d":
        net = BridgeDenoiser.load(folder)
        return net, int(net.unet.config.sample_size)
    if spec.kind == "i2sb-adm-unet":
        from .i2sb_checkpoint import load_i2sb_checkpoint

        net = load_i2sb_checkpoint(folder / spec.files[0])
        return net, int(net.diffusion_model.config["image_size"])
    raise InputError(f"Model '{spec.id}' ({spec.kind}) is not a bridge; choose one of kind {', '.join(BRIDGE_KINDS)}.")


class ImageNetNormalized(nn.Module):
    """A torchvision-format classifier that takes [0, 1] images, as the RCSB sampler feeds them."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))

    def forward(self, x):
        return self.model((x - self.mean) / self.std)

    def embed(self, x):
        feats = {}
        handle = self.model.fc.register_forward_hook(lambda m, inp, out: feats.setdefault("x", inp[0]))
        self.forward(x)
        handle.remove()
        return feats["x"]


def classifier_from_state(arch: str, state: dict[str, torch.Tensor]) -> tuple[nn.Module, tuple[str, ...]]:
    """A torchvision-format ImageNet classifier from its state dict, and its class names.

    ResNet-50 is the project's own module with torchvision's names (``resnet.py``), so it needs no
    torchvision; other architectures use torchvision when it is installed. The model is made on the
    meta device and the tensors are assigned (strict), so the weights are not held twice.
    """
    if arch in ARCHITECTURES:
        with torch.device("meta"):
            model = ARCHITECTURES[arch]()
        categories = imagenet_categories()
    else:
        try:
            import torchvision
        except ImportError:
            raise InputError(f"'{arch}' needs torchvision (ResNet-50 does not): install torchvision matching "
                             "your torch, e.g. the [gpu] extra (`pip install -e '.[gpu]'`).") from None
        categories = tuple(next(iter(torchvision.models.get_model_weights(arch))).meta["categories"])
        with torch.device("meta"):
            model = torchvision.models.get_model(arch, weights=None)
    try:
        model.load_state_dict(state, strict=True, assign=True)
    except RuntimeError as e:
        detail = "; ".join(line.strip() for line in str(e).splitlines()[1:3])
        raise InputError(f"not a torchvision {arch} state dict: {detail}") from None
    return ImageNetNormalized(model).eval(), categories


def load_classifier(spec: ModelSpec, folder: Path) -> tuple[nn.Module, tuple[str, ...]]:
    """The classifier and its class names."""
    if spec.kind == "classifier":
        return ShapeClassifier.load(folder), CLASSES
    if spec.kind == "torchvision-classifier":
        path = folder / spec.files[0]
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # a truncated or foreign file
            raise InputError(f"{path.name} is not a readable state dict ({e.__class__.__name__}).") from None
        if not isinstance(state, dict):
            raise InputError(f"{path.name} is not a state dict (save model.state_dict(), not the model).")
        try:
            return classifier_from_state(spec.location.rsplit("/", 1)[-1], state)
        except InputError as e:
            raise InputError(f"{path.name}: {e}") from None
    raise InputError(f"Model '{spec.id}' ({spec.kind}) is not a classifier; choose one of kind {', '.join(CLASSIFIER_KINDS)}.")
