"""RCSB: the region-constrained, classifier-guided Schrödinger-bridge sampler (diffusers-style pipeline).

Per step n → n′ (the published sampler, ``sobieskibj/rcsb``):
  1. x̂0 = x_n − σ_fwd(n)·ε_θ(x_n, n)                               (Tweedie-style estimate)
  2. g  = ∇_{x_n} log p(target | rescale(x̂0))                       (back through the network)
  3. g ← Adam moment ratio m̂/(√v̂+ε), reset per trajectory; g ← g / ‖g_first‖
  4. x_n ← x_n + s·g;   x_{n′} = posterior(x_n, x̂0)                  (OT-ODE, deterministic)
  5. x_{n′} ← (1−M)·x1 + M·x_{n′}                                    (hard region constraint)
Starting at τ·T from the bridge marginal between the image and x1 = x·(1−M) + M·noise.

The baselines of the bench run through the same code: ``guidance="noisy"`` differentiates the
classifier on x_n directly (no Tweedie, no stabilisation), and a full mask is unconstrained guidance.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F

from .schedule import BridgeSchedule, corrupt


@dataclass
class RCSBOutput:
    images: torch.Tensor  # B×3×H×W in [-1, 1]; outside the mask exactly the input
    x1: torch.Tensor  # the corrupted endpoints used


class AdamStabilizer:
    """Adam's bias-corrected moment ratio, applied to guidance gradients (state per trajectory)."""

    def __init__(self, betas=(0.9, 0.999), eps: float = 1e-8):
        self.b1, self.b2 = betas
        self.eps = eps
        self.m = self.v = None
        self.k = 0

    def __call__(self, g: torch.Tensor) -> torch.Tensor:
        self.k += 1
        self.m = (1 - self.b1) * g if self.m is None else self.b1 * self.m + (1 - self.b1) * g
        self.v = (1 - self.b2) * g * g if self.v is None else self.b2 * self.v + (1 - self.b2) * g * g
        m_hat = self.m / (1 - self.b1**self.k)
        v_hat = self.v / (1 - self.b2**self.k)
        return m_hat / (v_hat.sqrt() + self.eps)


def rescale_for_classifier(x: torch.Tensor, mode: str) -> torch.Tensor:
    """[-1, 1] → [0, 1]: per-image min-max (as RCSB does for x̂0) or a plain clamp."""
    if mode == "minmax":
        lo = x.amin((1, 2, 3), keepdim=True)
        hi = x.amax((1, 2, 3), keepdim=True)
        return (x - lo) / (hi - lo).clamp_min(1e-5)
    return ((x + 1) / 2).clamp(0, 1)


class RCSBPipeline:
    def __init__(self, bridge: torch.nn.Module, classifier: torch.nn.Module, schedule: BridgeSchedule | None = None):
        self.bridge = bridge.eval()
        self.classifier = classifier.eval()
        self.schedule = schedule or BridgeSchedule()
        for p in list(self.bridge.parameters()) + list(self.classifier.parameters()):
            p.requires_grad_(False)

    def __call__(self, *args, callback_on_step_end: Callable[[int, int, dict], None] | None = None, **kwargs) -> RCSBOutput:
        """Run the sampler to the end; ``callback_on_step_end(step, total, {"x0_hat", "xt"})`` after each step."""
        for item in self.iterate(*args, **kwargs):
            if isinstance(item, RCSBOutput):
                return item
            if callback_on_step_end is not None:
                callback_on_step_end(item["step"], item["total"], item)
        raise RuntimeError("sampler ended without output")

    def iterate(
        self,
        image: torch.Tensor,  # 1×3×H×W or B×3×H×W in [-1, 1]
        mask: torch.Tensor,  # 1×1×H×W or B×1×H×W, 1 = editable
        target: int,
        num_inference_steps: int = 100,
        start_step: int | None = None,
        start_fraction: float = 0.6,
        guidance_scale: float = 1.5,
        num_samples: int = 1,
        guidance: Literal["tweedie", "noisy", "none"] = "tweedie",
        stabilize: bool = True,
        classifier_input: Literal["minmax", "clamp"] = "minmax",
        generator: torch.Generator | None = None,
    ):
        """The sampler as a generator: a dict per step (step, total, x0_hat, xt), then the RCSBOutput."""
        sched = self.schedule
        x = image.expand(num_samples, -1, -1, -1).clone() if image.shape[0] == 1 else image.clone()
        m = mask.to(x.dtype).expand(x.shape[0], 1, -1, -1)
        x1 = corrupt(x, m, generator)
        start = start_step if start_step is not None else max(1, round(start_fraction * sched.num_steps))
        steps = sched.sampling_steps(start, num_inference_steps)
        xt = sched.q_sample(steps[0], x, x1, ot_ode=True)
        stabilizer = AdamStabilizer()
        first_norm = None
        total = len(steps) - 1
        for i, (n, n_prev) in enumerate(zip(steps[:-1], steps[1:], strict=True)):
            with torch.enable_grad():
                xt = xt.detach().requires_grad_(guidance != "none")
                eps = self.bridge(xt, n, m)
                x0_hat = sched.pred_x0(n, xt, eps)
                if guidance != "none":
                    source = x0_hat if guidance == "tweedie" else xt
                    logp = F.log_softmax(self.classifier(rescale_for_classifier(source, classifier_input)), 1)
                    grad = torch.autograd.grad(logp[:, target].sum(), xt)[0]
            x0_hat = x0_hat.detach()
            xt = xt.detach()
            if guidance != "none":
                if stabilize:
                    grad = stabilizer(grad)
                    if first_norm is None:
                        first_norm = grad.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, 1, 1, 1)
                    grad = grad / first_norm
                xt = xt + guidance_scale * grad
            xt = sched.posterior(n_prev, n, xt, x0_hat, ot_ode=True)
            xt = (1 - m) * x1 + m * xt
            yield {"step": i + 1, "total": total, "x0_hat": x0_hat, "xt": xt}
        out = (1 - m) * x + m * xt.clamp(-1, 1)
        yield RCSBOutput(out, x1)
