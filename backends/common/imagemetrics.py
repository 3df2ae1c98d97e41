"""Image similarity metrics (PSNR, SSIM) on uint8 or float images, for benches and tests.

SSIM follows Wang et al. 2004 on the grey image (Gaussian window σ = 1.5, K1 = 0.01, K2 = 0.03),
as skimage and the Build-A-Scene evaluation compute it.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage


def _float(img: np.ndarray) -> np.ndarray:
    img = np.asarray(img)
    return img.astype(np.float64) / 255.0 if img.dtype == np.uint8 else img.astype(np.float64)


def psnr(a: np.ndarray, b: np.ndarray, mask: np.ndarray | None = None, cap: float = 100.0) -> float:
    """PSNR in dB over the pixels in ``mask`` (all when None); identical images give ``cap``."""
    a, b = _float(a), _float(b)
    err = (a - b) ** 2
    if mask is not None:
        err = err[np.asarray(mask, bool)]
    mse = float(err.mean()) if err.size else 0.0
    return cap if mse <= 10 ** (-cap / 10) else float(10 * np.log10(1.0 / mse))


def ssim(a: np.ndarray, b: np.ndarray, sigma: float = 1.5) -> float:
    a, b = _float(a), _float(b)
    if a.ndim == 3:
        a, b = a @ [0.299, 0.587, 0.114], b @ [0.299, 0.587, 0.114]
    c1, c2 = 0.01 ** 2, 0.03 ** 2

    def blur(x):
        return ndimage.gaussian_filter(x, sigma, truncate=3.5)

    mu_a, mu_b = blur(a), blur(b)
    va = blur(a * a) - mu_a ** 2
    vb = blur(b * b) - mu_b ** 2
    cov = blur(a * b) - mu_a * mu_b
    s = ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a ** 2 + mu_b ** 2 + c1) * (va + vb + c2))
    return float(s.mean())
