"""Bivariate-normal orthant probabilities, exact and vectorised (``scipy.stats.mvn`` is gone since SciPy 1.16).

DCT's bridge equations solve P(Z₁ > h₁, Z₂ > h₂; ρ) = τ̂ for ρ. The authors called Genz's Fortran
``mvn.mvnun``; SciPy's ``multivariate_normal.cdf`` is now a quasi-Monte-Carlo routine whose noise would
make a root finder wander. Owen's T function (``scipy.special.owens_t``) gives the probability in closed
form, deterministically, for whole arrays of (h₁, h₂, ρ) at once.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, owens_t

RHO_EDGE = 1.0 - 1e-12  # ρ is kept inside (−1, 1): Owen's T needs √(1 − ρ²) > 0


def lower_orthant(h, k, rho) -> np.ndarray:
    """Φ₂(h, k; ρ) = P(Z₁ ≤ h, Z₂ ≤ k) for standard normals with correlation ρ (Owen 1956)."""
    h, k, rho = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (h, k, rho)))
    rho = np.clip(rho, -RHO_EDGE, RHO_EDGE)
    s = np.sqrt(1.0 - rho * rho)
    out = np.empty(h.shape)
    zero_h, zero_k = h == 0, k == 0
    both = zero_h & zero_k
    out[both] = 0.25 + np.arcsin(rho[both]) / (2 * np.pi)
    only_h = zero_h & ~zero_k  # Φ₂(0, k; ρ) = Φ(k)/2 − T(k, −ρ/√(1−ρ²))
    out[only_h] = 0.5 * ndtr(k[only_h]) - owens_t(k[only_h], -rho[only_h] / s[only_h])
    only_k = zero_k & ~zero_h
    out[only_k] = 0.5 * ndtr(h[only_k]) - owens_t(h[only_k], -rho[only_k] / s[only_k])
    rest = ~(zero_h | zero_k)
    hh, kk, rr, ss = h[rest], k[rest], rho[rest], s[rest]
    beta = np.where(hh * kk < 0, 0.5, 0.0)
    out[rest] = (0.5 * ndtr(hh) + 0.5 * ndtr(kk) - owens_t(hh, (kk - rr * hh) / (hh * ss))
                 - owens_t(kk, (hh - rr * kk) / (kk * ss)) - beta)
    return np.clip(out, 0.0, 1.0)


def upper_orthant(h, k, rho) -> np.ndarray:
    """P(Z₁ > h, Z₂ > k; ρ) = Φ₂(−h, −k; ρ): the probability both binarised variables are 1."""
    return lower_orthant(-np.asarray(h, dtype=float), -np.asarray(k, dtype=float), rho)


def density(h, k, rho) -> np.ndarray:
    """φ₂(h, k; ρ), the bivariate-normal density (∂P/∂ρ of either orthant, Plackett's identity)."""
    h, k, rho = (np.asarray(v, dtype=float) for v in (h, k, rho))
    one = 1.0 - rho * rho
    return np.exp(-(h * h - 2 * rho * h * k + k * k) / (2 * one)) / (2 * np.pi * np.sqrt(one))


def solve_correlation(h, k, tau, iterations: int = 60) -> np.ndarray:
    """The ρ in [−1, 1] with P(Z₁ > h, Z₂ > k; ρ) = τ (the bridge equation), for arrays at once.

    The orthant probability rises strictly with ρ (its derivative is φ₂ > 0), so bisection finds the root
    to machine precision; a τ beyond what any ρ gives ends at the nearer end, as the authors' bounded
    minimiser (``fminbound`` on [−1, 1]) would."""
    h, k, tau = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (h, k, tau)))
    lo, hi = np.full(h.shape, -1.0), np.full(h.shape, 1.0)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        below = upper_orthant(h, k, mid) < tau
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)
