"""Build the bridge and the classifier of a registered model, whatever its kind.

Embedded models (trained by the project) and the published ones (the I2SB ImageNet bridge, torchvision
ImageNet classifiers) come out with the same interfaces: ``bridge(x_n, step, mask) → ε̂`` and
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
    """A torchvision classifier that takes [0, 1] images, as the RCSB sampler feeds them."""

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


def load_classifier(spec: ModelSpec, folder: Path) -> tuple[nn.Module, tuple[str, ...]]:
    """The classifier and its class names."""
    if spec.kind == "classifier":
        return ShapeClassifier.load(folder), CLASSES
    if spec.kind == "torchvision-classifier":
        try:
            import torchvision
        except ImportError:
            raise InputError(f"Model '{spec.id}' needs torchvision: install the [gpu] extra "
                             "(`pip install -e '.[gpu]'`) or torchvision matching your torch.") from None
        arch = spec.location.rsplit("/", 1)[-1]
        weights_enum = torchvision.models.get_model_weights(arch)
        categories = tuple(next(iter(weights_enum)).meta["categories"])
        model = torchvision.models.get_model(arch, weights=None)
        state = torch.load(folder / spec.files[0], map_location="cpu", weights_only=True)
        model.load_state_dict(state)
        return ImageNetNormalized(model).eval(), categories
    raise InputError(f"Model '{spec.id}' ({spec.kind}) is not a classifier; choose one of kind {', '.join(CLASSIFIER_KINDS)}.")
