"""The losses of Score Forgetting Distillation and of the ESD-style baseline.

As in the authors' DDPM code: every loss sums over pixels (C, H, W) and averages over the batch (this is
what their learning rates are tuned for); x₀ guesses come from ε predictions; ω is per sample, without
gradient, clamped at 1e-5.
"""

from __future__ import annotations

import torch

from .schedule import add_noise, x0_from_eps


def fake_score_loss(psi, x0: torch.Tensor, t: torch.Tensor, y: torch.Tensor, eps: torch.Tensor,
                    abar: torch.Tensor) -> torch.Tensor:
    """ψ's denoising loss ‖ε − ε_ψ(x_t, t, y)‖² on (detached) generator samples ``x0``."""
    xt = add_noise(x0, t, eps, abar)
    return (eps - psi(xt, t, y)).square().sum(dim=(1, 2, 3)).mean()


def sid_generator_loss(teacher, psi, x_g: torch.Tensor, t: torch.Tensor, y_teacher: torch.Tensor, y_psi: torch.Tensor,
                       eps: torch.Tensor, abar: torch.Tensor, alpha: float) -> torch.Tensor:
    """Score identity Distillation's generator loss [(f_p − f_ψ)·((f_p − x_g) − α(f_p − f_ψ))]/ω.

    With ``y_teacher == y_psi`` it is SiD's distillation loss; with the teacher on the safe label and G, ψ on
    the forget label it is SFD's forgetting loss (the forget class's score pulled onto the safe class's).
    Gradients reach G through x_g (and through the frozen nets' inputs), never the nets' weights."""
    xt = add_noise(x_g, t, eps, abar)
    f_psi = x0_from_eps(xt, t, psi(xt, t, y_psi), abar)
    f_p = x0_from_eps(xt, t, teacher(xt, t, y_teacher), abar)
    with torch.no_grad():
        omega = (f_p - x_g).abs().mean(dim=(1, 2, 3), keepdim=True).clamp(min=1e-5)
    loss = ((f_p - f_psi) * ((f_p - x_g) - alpha * (f_p - f_psi))) / omega
    return loss.sum(dim=(1, 2, 3)).mean()


def esd_loss(student, teacher, xt: torch.Tensor, t: torch.Tensor, forget: int, null: int, eta: float) -> torch.Tensor:
    """ESD on labels: ``forget`` and ``null`` are the forget class's and the null label's indices."""
    n = xt.shape[0]
    return esd_condition_loss(student, teacher, xt, t, torch.full((n,), forget, dtype=torch.long),
                              torch.full((n,), null, dtype=torch.long), eta)


def esd_condition_loss(student, teacher, xt: torch.Tensor, t: torch.Tensor, y_forget, y_null, eta: float) -> torch.Tensor:
    """ESD: ε_θ*(x_t, c_f) regressed onto the frozen teacher's negatively guided ε_θ(x_t,∅) − η(ε_θ(x_t,c_f) − ε_θ(x_t,∅));
    ``y_forget`` / ``y_null`` are whatever the networks take as a condition (labels, or a prompt's embedding)."""
    with torch.no_grad():
        e_null = teacher(xt, t, y_null)
        e_f = teacher(xt, t, y_forget)
        target = e_null - eta * (e_f - e_null)
    return (student(xt, t, y_forget) - target).square().sum(dim=(1, 2, 3)).mean()


def denoising_loss(net, x0: torch.Tensor, t: torch.Tensor, y: torch.Tensor, eps: torch.Tensor,
                   abar: torch.Tensor) -> torch.Tensor:
    """The DDPM loss ‖ε − ε_θ(x_t, t, y)‖² (summed over pixels, averaged over the batch): SalUn's retain loss, and
    the forgetting loss whose gradient makes its saliency mask."""
    return (eps - net(add_noise(x0, t, eps, abar), t, y)).square().sum(dim=(1, 2, 3)).mean()


def salun_forget_loss(net, x0: torch.Tensor, t: torch.Tensor, forget: torch.Tensor, safe: torch.Tensor,
                      eps: torch.Tensor, abar: torch.Tensor) -> torch.Tensor:
    """SalUn's random-label (remap) loss: ε_θ(x_t, c_f) regressed onto the model's own, detached ε_θ(x_t, c_s) —
    the forget class's noise prediction relabelled as the safe class's. Mean squared error (per pixel), as theirs."""
    xt = add_noise(x0, t, eps, abar)
    with torch.no_grad():
        target = net(xt, t, safe)
    return (net(xt, t, forget) - target).square().mean()
