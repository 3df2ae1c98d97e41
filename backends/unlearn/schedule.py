"""The DDPM noise schedule of SFD's label-conditional experiments (linear β 1e-4…0.02, T = 1000,
ε-prediction) and the deterministic DDIM sampler the teacher is drawn with. Every function takes ᾱ as an argument,
so the text teacher's (SD's scaled-linear schedule, read from its scheduler) runs through the same code."""

from __future__ import annotations

import torch

T = 1000


def alphas_cumprod(device=None) -> torch.Tensor:
    betas = torch.linspace(1e-4, 0.02, T, dtype=torch.float64)
    return torch.cumprod(1 - betas, 0).float().to(device)


def add_noise(x0: torch.Tensor, t: torch.Tensor, eps: torch.Tensor, abar: torch.Tensor) -> torch.Tensor:
    a = abar[t].view(-1, 1, 1, 1)
    return a.sqrt() * x0 + (1 - a).sqrt() * eps


def x0_from_eps(xt: torch.Tensor, t: torch.Tensor, eps: torch.Tensor, abar: torch.Tensor) -> torch.Tensor:
    a = abar[t].view(-1, 1, 1, 1)
    return (xt - (1 - a).sqrt() * eps) / a.sqrt()


def ddim_timesteps(steps: int) -> list[int]:
    """``steps`` evenly spaced timesteps from T−1 down to 0."""
    return torch.linspace(T - 1, 0, steps).round().long().tolist()


@torch.no_grad()
def ddim_sample(eps_fn, noise: torch.Tensor, steps: int, abar: torch.Tensor, cancel=None, clip: bool = True) -> torch.Tensor:
    """x₀ from ``noise`` by DDIM (η = 0) in ``steps`` steps; ``eps_fn(x_t, t)`` is the (guided) ε prediction,
    ``cancel()`` is called between steps (it raises to stop). ``clip`` keeps each x₀ guess in [-1, 1] (pixels; off for
    the text teacher's latents, as its scheduler's ``clip_sample=False``); ``abar`` is the schedule's ᾱ (the text
    teacher's scaled-linear one comes from its scheduler)."""
    x = noise
    ts = ddim_timesteps(steps)
    for i, t in enumerate(ts):
        if cancel is not None:
            cancel()
        tt = torch.full((x.shape[0],), t, dtype=torch.long)
        eps = eps_fn(x, tt)
        x0 = x0_from_eps(x, tt, eps, abar)
        x0 = x0.clamp(-1, 1) if clip else x0
        if i + 1 < len(ts):
            a_next = abar[ts[i + 1]]
            eps = (x - abar[t].sqrt() * x0) / (1 - abar[t]).sqrt()
            x = a_next.sqrt() * x0 + (1 - a_next).sqrt() * eps
        else:
            x = x0
    return x
