"""Drawing samples on the text teacher with each method from the same noise and the same box: the teacher (guided
DDIM, as the 3D Layout tab samples it), negative guidance, ESD's fine-tuned UNet (sampled like the teacher) and SFD's
one-step generator (one UNet call, no guidance).

Negative guidance is the label baseline's, with the forget prompt as the negative branch: a prompt that names the
forgotten word is sampled with ε(∅) − η(ε(c_w) − ε(∅)) (ESD's target at sampling time), every other prompt with the
teacher's CFG. (SD's usual negative prompt — the word alone in place of CFG's ∅ — was tried first: on this tiny model
"red" alone guides nothing, and 8 of 8 "a red cube / sphere" samples stayed red.)"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from backends.unlearn.generator import one_step
from backends.unlearn.schedule import ddim_sample

from .teacher import Cond, Guided, TextEps, TextTeacher

TEXT_METHODS = ("teacher", "sfd", "esd", "negative_guidance")


@dataclass
class TextSamplers:
    teacher: TextTeacher
    forget: str
    sfd: TextEps | None = None
    esd: TextEps | None = None
    t_init: int = 625
    teacher_steps: int = 20
    cfg: float = 5.0
    eta: float = 1.0  # negative guidance strength (ESD's η)

    forget_mask: torch.Tensor | None = None  # which images' prompts name the forgotten word (negative guidance)

    def available(self) -> tuple[str, ...]:
        return tuple(m for m in TEXT_METHODS if m in ("teacher", "negative_guidance") or getattr(self, m) is not None)


def latent_noise(teacher: TextTeacher, n: int, seed: int) -> torch.Tensor:
    return torch.randn((n, *teacher.latent_shape), generator=torch.Generator().manual_seed(seed))


@torch.no_grad()
def draw_latents(s: TextSamplers, method: str, cond: Cond, z: torch.Tensor, cancel=None) -> torch.Tensor:
    null = s.teacher.encode([""])
    abar = s.teacher.abar
    if method == "sfd":
        return one_step(s.sfd, z, cond, s.t_init, abar)
    if method in ("teacher", "esd"):
        net = Guided(s.teacher.eps if method == "teacher" else s.esd, null, s.cfg)
    elif method == "negative_guidance":
        return ddim_sample(negative_guidance(s, cond, null), z, s.teacher_steps, abar, cancel, clip=False)
    else:
        raise ValueError(f"unknown method {method!r}")
    return ddim_sample(lambda xt, t: net(xt, t, cond), z, s.teacher_steps, abar, cancel, clip=False)


def negative_guidance(s: TextSamplers, cond: Cond, null: torch.Tensor):
    """ε(x_t, t) of negative guidance for the batch ``cond`` (see the module's docstring)."""
    guided = Guided(s.teacher.eps, null, s.cfg)
    forget = s.forget_mask if s.forget_mask is not None else torch.zeros(len(cond), dtype=torch.bool)
    eps_net = s.teacher.eps

    def eps(xt, t):
        e = guided(xt, t, cond)
        if forget.any():
            cf = cond[forget]
            e_null, e_f = eps_net(xt[forget], t[forget], cf.with_emb(null)), eps_net(xt[forget], t[forget], cf)
            e = e.clone()
            e[forget] = e_null - s.eta * (e_f - e_null)
        return e

    return eps


def draw_text(s: TextSamplers, method: str, cond: Cond, z: torch.Tensor, cancel=None) -> tuple[np.ndarray, float]:
    """uint8 images (N×64×64×3, decoded by the VAE) and the seconds it took (decoding included for every method)."""
    t0 = time.perf_counter()
    images = s.teacher.decode(draw_latents(s, method, cond, z, cancel))
    return images, time.perf_counter() - t0
