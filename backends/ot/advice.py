"""Which solver to pick for a problem's size and precision, in words (what this suite measured; bench.ot)."""

from __future__ import annotations

import math


def advice(n: int, epsilon: float, device: str = "cpu") -> str:
    """One paragraph for a user: exact EMD, Sinkhorn or MDOT-TNT for n points at ε, on ``device``."""
    gamma = 1.0 / epsilon
    gap = math.log(max(n, 2)) * epsilon
    parts = [f"n = {n:,} points, ε = {epsilon:.3g} (γ = {gamma:.4g}): the entropic plan's cost is within about "
             f"{gap:.1e} (log n · ε, relative to a cost in [0, 1]) of exact."]
    if device == "cpu" and n <= 4096:
        parts.append("On a CPU at this size the exact network simplex (POT's ot.emd) is usually the fastest way to an "
                     "exact plan; pick an entropic solver when a smooth plan is wanted.")
    if gamma <= 2**8:
        parts.append("At this weak precision plain Sinkhorn converges in few iterations and is hard to beat.")
    else:
        parts.append("At this strong precision plain Sinkhorn's kernel exp(−C/ε) may underflow and log-domain "
                     "Sinkhorn needs many iterations: this is the regime MDOT-TNT (annealed ε, Newton steps) is made "
                     "for. Note that its published stopping rule leaves a marginal error of about H/(2γ^1.5) before "
                     "rounding, which can bound its gap at small n where Sinkhorn converges fully.")
    if device != "cpu" or n > 4096:
        parts.append("Entropic solvers pay off on a GPU, at large n and for batches.")
    return " ".join(parts)
