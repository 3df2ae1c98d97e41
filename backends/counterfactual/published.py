"""What the Counterfactual loaders take from the published checkpoints, at full size (meta device).

``i2sb-imagenet-freeform`` (I2SB's ADM-256 ``latest.pt``, read by ``i2sb_checkpoint``):

- ``net`` / ``ema`` / ``ema_order``: the ``latest.pt`` layout — ``Image256Net.state_dict()``, torch_ema's
  ``shadow_params`` list (``shadow_params.<i>``) and which parameter each shadow tensor is, in order;
- ``adm``: a bare ADM ``UNetModel`` state dict (I2SB's ``256x256_diffusion_uncond_fixedsigma.pt``),
  ``adm_learn_sigma`` the OpenAI file it is cut from (6 output channels);
- ``*_cond_x1``: the same for a network trained with ``--cond-x1`` (6 input channels).

``resnet50-imagenet``: ``model``, a ``torchvision.models.resnet50().state_dict()`` file.

``seeded_weights`` fills a name → shape list with deterministic values, so a forward-equivalence fixture
needs to store only the input and the authors' output, not the weights.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from backends.common.published_formats import Format, Shape, shapes_of

from .adm import ADMUNet
from .i2sb_checkpoint import I2SBNetwork
from .resnet import resnet50

PUBLISHED_MODELS = ("i2sb-imagenet-freeform", "resnet50-imagenet")


def _i2sb_components(suffix: str, **config) -> Format:
    with torch.device("meta"):
        net = I2SBNetwork(ADMUNet(**config))
    params = list(net.named_parameters())
    return {f"net{suffix}": shapes_of(net.state_dict()),
            f"ema{suffix}": {f"shadow_params.{i}": tuple(p.shape) for i, (_, p) in enumerate(params)},
            f"ema_order{suffix}": {f"{i:04d} {name}": tuple(p.shape) for i, (name, p) in enumerate(params)},
            f"adm{suffix}": shapes_of(net.diffusion_model.state_dict())}


def expected_format(model_id: str) -> Format:
    if model_id == "i2sb-imagenet-freeform":
        out = _i2sb_components("") | _i2sb_components("_cond_x1", in_channels=6)
        with torch.device("meta"):
            out["adm_learn_sigma"] = shapes_of(ADMUNet(out_channels=6).state_dict())
        return out
    if model_id == "resnet50-imagenet":
        with torch.device("meta"):
            return {"model": shapes_of(resnet50().state_dict())}
    raise KeyError(f"no published format for {model_id!r}; known: {', '.join(PUBLISHED_MODELS)}")


def seeded_weights(shapes: Mapping[str, Shape], seed: int = 0) -> dict[str, torch.Tensor]:
    """Deterministic weights of a sane scale (fan-in scaled kernels, norm scales near 1, positive
    running variances) for the names in ``shapes``, drawn in sorted-name order."""
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for name in sorted(shapes):
        shape = tuple(shapes[name])
        if name.endswith("num_batches_tracked"):
            out[name] = torch.zeros(shape, dtype=torch.long)
            continue
        t = torch.randn(shape, generator=gen)
        if name.endswith("running_var"):
            t = 1 + 0.1 * t.abs()
        elif len(shape) > 1:
            t = t / math.sqrt(math.prod(shape[1:]))
        elif name.endswith("weight"):  # a norm's scale
            t = 1 + 0.1 * t
        else:
            t = 0.1 * t
        out[name] = t
    return out
