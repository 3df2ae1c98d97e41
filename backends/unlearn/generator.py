"""SFD's one-step generator: the teacher's network evaluated once at a fixed t_init on scaled noise.

x_t = √(1−ᾱ_init)·z, then x_g = x_t/√ᾱ_init − √(1/ᾱ_init − 1)·ε_G(x_t, t_init, y) — the teacher's own
x₀ guess from t_init, so a generator initialised from the teacher starts as a blurry but sensible sampler.
"""

from __future__ import annotations

import torch

from .schedule import alphas_cumprod

T_INIT = 440  # the CIFAR-10 / STL-10 configs' distill.t_init


def one_step(net, z: torch.Tensor, y: torch.Tensor, t_init: int = T_INIT, abar: torch.Tensor | None = None) -> torch.Tensor:
    """x_g in [-1, 1]-ish (not clamped: the losses see the raw output) from noise ``z`` for labels ``y``."""
    abar = alphas_cumprod() if abar is None else abar
    a = abar[t_init]
    xt = (1 - a).sqrt() * z
    t = torch.full((z.shape[0],), t_init, dtype=torch.long)
    return xt / a.sqrt() - (1 / a - 1).sqrt() * net(xt, t, y)
