"""The I2SB bridge between a clean image x0 and its corrupted endpoint x1, exactly as in I2SB/RCSB.

T steps with a symmetric β schedule; σ_fwd² = cumsum β, σ_bwd² = reverse cumsum β. The marginal
q(x_n | x0, x1) has mean μ0·x0 + μ1·x1 with μ0 = σb²/(σf²+σb²), μ1 = σf²/(σf²+σb²); the network
predicts (x_n − x0)/σf(n), so x̂0 = x_n − σf(n)·ε̂; the OT-ODE posterior step is deterministic.
"""

from __future__ import annotations

import numpy as np
import torch
from diffusers.configuration_utils import ConfigMixin, register_to_config
from diffusers.schedulers.scheduling_utils import SCHEDULER_CONFIG_NAME, SchedulerMixin
from diffusers.utils.torch_utils import randn_tensor


def gaussian_product_coef(sigma1: torch.Tensor, sigma2: torch.Tensor):
    """Coefficients of the product of N(x0, σ1²) and N(x1, σ2²): (μ for x0, μ for x1, variance)."""
    denom = sigma1**2 + sigma2**2
    return sigma2**2 / denom, sigma1**2 / denom, (sigma1**2 * sigma2**2) / denom


class BridgeSchedule(SchedulerMixin, ConfigMixin):
    """The bridge's schedule as a diffusers scheduler (``scheduler/scheduler_config.json`` in a pipeline folder).

    ``set_timesteps(n, start_step)`` lays out the sampling steps; the RCSB loop calls ``pred_x0`` and
    ``posterior`` itself because guidance acts between them.
    """

    config_name = SCHEDULER_CONFIG_NAME
    order = 1

    @register_to_config
    def __init__(self, num_steps: int = 1000, beta_start: float = 1e-4, beta_max: float = 1.0):
        if num_steps < 4 or num_steps % 2:
            raise ValueError("the bridge needs an even number of steps ≥ 4")
        self.num_steps = num_steps
        self.timesteps = torch.arange(num_steps - 1, -1, -1)
        half = torch.linspace(beta_start**0.5, (beta_max / num_steps) ** 0.5, num_steps, dtype=torch.float64) ** 2
        half = half[: num_steps // 2]
        self.betas = torch.cat([half, half.flip(0)])
        self.std_fwd = torch.sqrt(torch.cumsum(self.betas, 0))
        self.std_bwd = torch.sqrt(torch.flip(torch.cumsum(torch.flip(self.betas, [0]), 0), [0]))
        self.mu_x0, self.mu_x1, var = gaussian_product_coef(self.std_fwd, self.std_bwd)
        self.std_sb = torch.sqrt(var)

    def _at(self, table: torch.Tensor, step, like: torch.Tensor) -> torch.Tensor:
        step = torch.as_tensor(step, dtype=torch.long)
        v = table[step].to(like.dtype)
        return v.reshape(-1, *([1] * (like.dim() - 1))) if v.dim() else v

    def q_sample(self, step, x0: torch.Tensor, x1: torch.Tensor, ot_ode: bool = False,
                 generator: torch.Generator | None = None) -> torch.Tensor:
        """A sample of x_n on the bridge (its mean when ``ot_ode``)."""
        xt = self._at(self.mu_x0, step, x0) * x0 + self._at(self.mu_x1, step, x0) * x1
        if not ot_ode:
            noise = torch.randn(x0.shape, generator=generator, dtype=x0.dtype, device=x0.device)
            xt = xt + self._at(self.std_sb, step, x0) * noise
        return xt

    def label(self, step, x0: torch.Tensor, xt: torch.Tensor) -> torch.Tensor:
        """Training target of the network: (x_n − x0) / σ_fwd(n)."""
        return (xt - x0) / self._at(self.std_fwd, step, x0)

    def pred_x0(self, step, xt: torch.Tensor, net_out: torch.Tensor, clip: bool = False) -> torch.Tensor:
        """Tweedie-style estimate x̂0 = x_n − σ_fwd(n)·ε̂."""
        x0 = xt - self._at(self.std_fwd, step, xt) * net_out
        return x0.clamp(-1, 1) if clip else x0

    def posterior(self, n_prev: int, n: int, xt: torch.Tensor, x0: torch.Tensor, ot_ode: bool = True,
                  generator: torch.Generator | None = None) -> torch.Tensor:
        """One step x_n → x_{n_prev} given x̂0 (deterministic with ``ot_ode``)."""
        std_n, std_prev = self.std_fwd[n], self.std_fwd[n_prev]
        std_delta = torch.sqrt(std_n**2 - std_prev**2)
        mu_x0, mu_xn, var = gaussian_product_coef(std_prev, std_delta)
        out = mu_x0.to(xt.dtype) * x0 + mu_xn.to(xt.dtype) * xt
        if not ot_ode and n_prev > 0:
            noise = torch.randn(xt.shape, generator=generator, dtype=xt.dtype, device=xt.device)
            out = out + torch.sqrt(var).to(xt.dtype) * noise
        return out

    def set_timesteps(self, num_inference_steps: int, start_step: int | None = None, device=None) -> None:
        """``timesteps``: descending from ``start_step − 1`` (default: the last step) to 0, one per network call,
        followed by the step the last call lands on."""
        steps = self.sampling_steps(self.num_steps if start_step is None else start_step, num_inference_steps)
        self.timesteps = torch.tensor(steps, device=device)

    def sampling_steps(self, start_step: int, nfe: int) -> list[int]:
        """Descending step indices from ``start_step − 1`` to 0 with ``nfe`` network calls."""
        if not 1 <= start_step <= self.num_steps:
            raise ValueError(f"start step must be within 1..{self.num_steps}")
        steps = np.unique(np.linspace(0, start_step - 1, max(2, nfe + 1)).round().astype(int))
        return steps[::-1].tolist()


def corrupt(x0: torch.Tensor, mask: torch.Tensor, generator=None) -> torch.Tensor:
    """The bridge's endpoint for free-form inpainting: x1 = x0·(1−M) + M·N(0, I).

    A list of generators seeds each image of a batch (diffusers' ``randn_tensor``)."""
    noise = randn_tensor(tuple(x0.shape), generator=generator, device=x0.device, dtype=torch.float32)
    return x0 * (1 - mask) + mask * noise.to(x0.dtype)
