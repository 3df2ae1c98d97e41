"""Drawing samples with each method from the same noise: the teacher (DDIM, 20+ steps), sampling-time negative
guidance of the teacher, the ESD-style and SalUn fine-tuned models (DDIM, same steps) and the SFD one-step
generator."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from .generator import one_step
from .schedule import alphas_cumprod, ddim_sample

METHODS = ("teacher", "sfd", "esd", "salun", "negative_guidance")
METHOD_TITLES = {"teacher": "Teacher (DDIM)", "sfd": "SFD (one step)", "esd": "ESD fine-tune (DDIM)",
                 "salun": "SalUn (DDIM)",
                 "negative_guidance": "Negative guidance (DDIM)"}


@dataclass
class Samplers:
    """The networks of one comparison: the teacher and, when trained or loaded, SFD's G, ESD's and SalUn's models."""

    teacher: torch.nn.Module
    forget: int
    sfd: torch.nn.Module | None = None
    esd: torch.nn.Module | None = None
    salun: torch.nn.Module | None = None
    t_init: int = 440
    teacher_steps: int = 20
    eta: float = 1.0  # negative guidance strength (ESD's η)

    def available(self) -> tuple[str, ...]:
        return tuple(m for m in METHODS if m in ("teacher", "negative_guidance") or getattr(self, m) is not None)


def to_uint8(x: torch.Tensor) -> np.ndarray:
    return ((x.clamp(-1, 1) + 1) * 127.5).round().byte().permute(0, 2, 3, 1).numpy()


def noise(n: int, seed: int) -> torch.Tensor:
    return torch.randn((n, 3, 32, 32), generator=torch.Generator().manual_seed(seed))


@torch.no_grad()
def draw(s: Samplers, method: str, labels: torch.Tensor, z: torch.Tensor, cancel=None) -> tuple[np.ndarray, float]:
    """uint8 images (N×32×32×3) for ``labels`` from noise ``z``, and the seconds it took."""
    abar = alphas_cumprod()
    t0 = time.perf_counter()
    if method == "sfd":
        x = one_step(s.sfd, z, labels, s.t_init, abar)
    elif method in ("teacher", "esd", "salun"):
        net = s.teacher if method == "teacher" else getattr(s, method)
        x = ddim_sample(lambda xt, t: net(xt, t, labels), z, s.teacher_steps, abar, cancel)
    elif method == "negative_guidance":
        forget = labels == s.forget
        null = torch.full_like(labels, s.teacher.null_label)

        def eps(xt, t):
            e = s.teacher(xt, t, labels)
            if forget.any():  # asked for the forgotten class: ε(∅) − η(ε(c_f) − ε(∅)), ESD's target at sampling time
                e_null = s.teacher(xt[forget], t[forget], null[forget])
                e = e.clone()
                e[forget] = e_null - s.eta * (e[forget] - e_null)
            return e

        x = ddim_sample(eps, z, s.teacher_steps, abar, cancel)
    else:
        raise ValueError(f"unknown method {method!r}")
    return to_uint8(x), time.perf_counter() - t0
