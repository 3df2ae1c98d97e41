"""The weight functions' kernel: Matérn ν=3/2 on the inputs x, plus (optionally) Matérn ν=3/2 on the models'
outputs M(x) — the kernel of the paper's Boston-housing notebook. Written out (two lines) rather than through
``sklearn.gaussian_process.kernels`` so the gradient code below never builds an n×n×m×m array."""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

SQRT3 = np.sqrt(3.0)


def matern32(a: np.ndarray, b: np.ndarray, length_scale: float) -> np.ndarray:
    """k(a, b) = (1 + √3 r/ℓ) exp(−√3 r/ℓ), r = |a − b|."""
    r = cdist(a, b) * (SQRT3 / length_scale)
    return (1.0 + r) * np.exp(-r)


def rbf(a: np.ndarray, b: np.ndarray, length_scale: float) -> np.ndarray:
    """k(a, b) = exp(−|a − b|² / ℓ²) (the pathological notebook's ``rbf_kernel(gamma=1/ℓ²)``)."""
    return np.exp(-cdist(a, b, "sqeuclidean") / length_scale**2)


KERNELS = {"matern32": matern32, "rbf": rbf}


def weight_kernel(x: np.ndarray, m: np.ndarray, xc: np.ndarray, mc: np.ndarray, *, kind: str, length_scale: float,
                  output_length_scale: float | None, offset: float) -> np.ndarray:
    """K((x, M(x)), (x_c, M(x_c))) = k_x + k_M + offset (k_M left out when ``output_length_scale`` is None)."""
    k = KERNELS[kind](x, xc, length_scale)
    if output_length_scale is not None:
        k = k + matern32(m, mc, output_length_scale)
    return k + offset
