"""Load the published I2SB/RCSB bridge (``latest.pt``) into our ADM U-Net, behind the same interface
as the embedded bridge: ``net(x_n, step, mask) → ε̂``.

I2SB saves ``{"net": Image256Net.state_dict(), "ema": torch_ema state, ...}``; the network's keys
are prefixed ``diffusion_model.``, the EMA's ``shadow_params`` follow ``net.parameters()`` order, and
sampling uses the EMA weights. Its time input is ``noise_levels[step]`` with
``noise_levels = linspace(t0, T, interval)·interval``. With ``cond_x1`` the network also sees x1
(6 input channels); that is read off the checkpoint's first convolution.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from backends.common.errors import InputError

from .adm import ADMUNet

PREFIX = "diffusion_model."


class I2SBNetwork(nn.Module):
    mask_channel = False

    def __init__(self, adm: ADMUNet, interval: int = 1000, t0: float = 1e-4, t1: float = 1.0):
        super().__init__()
        self.diffusion_model = adm
        self.register_buffer("noise_levels", torch.linspace(t0, t1, interval) * interval, persistent=False)
        self.cond_x1 = adm.config["in_channels"] == 6
        self.x1: torch.Tensor | None = None  # set by the caller when cond_x1

    def forward(self, xt: torch.Tensor, step, mask: torch.Tensor | None = None) -> torch.Tensor:
        steps = torch.as_tensor(step, device=xt.device).reshape(-1).expand(xt.shape[0])
        if self.cond_x1:
            if self.x1 is None:
                raise InputError("this I2SB checkpoint is conditioned on x1; set network.x1 first")
            xt = torch.cat([xt, self.x1], 1)
        return self.diffusion_model(xt, self.noise_levels[steps])


def load_i2sb_checkpoint(path: str | Path, use_ema: bool = True, **adm_overrides) -> I2SBNetwork:
    """Read ``latest.pt`` (weights only, no pickled code) and build the matching network."""
    path = Path(path)
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # a truncated or foreign file
        raise InputError(f"{path.name} is not a readable I2SB checkpoint ({e.__class__.__name__}).") from None
    state = ckpt.get("net", ckpt) if isinstance(ckpt, dict) else None
    if not isinstance(state, dict) or not any(k.startswith(PREFIX) for k in state):
        raise InputError(f"{path.name} has no I2SB network weights (expected keys '{PREFIX}…' under 'net').")
    state = {k[len(PREFIX):]: v for k, v in state.items() if k.startswith(PREFIX)}
    first = state["input_blocks.0.0.weight"]
    config = dict(in_channels=first.shape[1], model_channels=first.shape[0], out_channels=state["out.2.weight"].shape[0])
    config.update(adm_overrides)
    adm = ADMUNet(**config)
    missing, unexpected = adm.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise InputError(f"{path.name} does not match the ADM architecture: missing {missing[:3]}…, "
                         f"unexpected {unexpected[:3]}…")
    net = I2SBNetwork(adm)
    shadow = (ckpt.get("ema") or {}).get("shadow_params") if use_ema else None
    if shadow:
        params = list(net.parameters())
        if len(shadow) != len(params):
            raise InputError(f"{path.name}: EMA has {len(shadow)} tensors for {len(params)} parameters.")
        with torch.no_grad():
            for p, s in zip(params, shadow, strict=True):
                p.copy_(s)
    return net.eval()
