"""Colour transfer by optimal transport between two photos' colour distributions.

Each photo's pixels (RGB in [0, 1]) are compressed by k-means (Lloyd, seeded, on a pixel sample) to k weighted
colours; MDOT-TNT solves the k × k problem (squared Euclidean cost in RGB, scaled to [0, 1]); each source colour
moves to its barycentric image T(x_i) = Σ_j P_ij y_j / a_i, and every pixel is shifted by its colour's move
(pixel + T(x_i) − x_i), which keeps the photo's detail within a cluster.
"""

from __future__ import annotations

import numpy as np

from backends.common.errors import InputError

SAMPLE = 20_000  # pixels k-means fits on
LLOYD_STEPS = 12


def _nearest(x: np.ndarray, centres: np.ndarray, chunk: int = 65_536) -> np.ndarray:
    """Index of the nearest centre of every row of x (squared Euclidean), in chunks (bounded memory)."""
    out = np.empty(len(x), dtype=np.int64)
    cc = (centres * centres).sum(1)
    for s in range(0, len(x), chunk):
        part = x[s:s + chunk]
        out[s:s + chunk] = np.argmin(cc[None, :] - 2.0 * part @ centres.T, axis=1)
    return out


def palette(pixels: np.ndarray, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """k-means of (N, 3) pixels: (centres (k', 3), weights (k',) summing to 1, the label of every pixel).

    Fewer than k distinct colours give fewer clusters (k' ≤ k); empty clusters are dropped."""
    distinct = np.unique(pixels[: min(len(pixels), 200_000)], axis=0)
    k = int(min(k, len(distinct)))
    sample = pixels[rng.choice(len(pixels), size=min(SAMPLE, len(pixels)), replace=False)]
    centres = distinct[rng.choice(len(distinct), size=k, replace=False)].astype(np.float64)
    for _ in range(LLOYD_STEPS):
        lab = _nearest(sample, centres)
        counts = np.bincount(lab, minlength=k)
        sums = np.zeros_like(centres)
        np.add.at(sums, lab, sample)
        keep = counts > 0
        centres[keep] = sums[keep] / counts[keep, None]
    labels = _nearest(pixels, centres)
    counts = np.bincount(labels, minlength=k).astype(np.float64)
    used = counts > 0
    remap = np.cumsum(used) - 1
    return centres[used], counts[used] / counts.sum(), remap[labels]


def photo_pixels(image: np.ndarray) -> np.ndarray:
    """H×W×3 uint8 → (H·W, 3) float64 in [0, 1]."""
    if image.ndim != 3 or image.shape[2] != 3:
        raise InputError("A photo must be an H×W×3 colour image.")
    return image.reshape(-1, 3).astype(np.float64) / 255.0


def recolour(image: np.ndarray, labels: np.ndarray, centres: np.ndarray, plan: np.ndarray,
             target_centres: np.ndarray) -> np.ndarray:
    """Every pixel shifted by its colour's barycentric move under ``plan``; uint8, same shape as ``image``."""
    mass = plan.sum(1, keepdims=True)
    moved = (plan @ target_centres) / np.where(mass > 0, mass, 1.0)
    shift = np.where(mass > 0, moved - centres, 0.0)
    out = photo_pixels(image) + shift[labels]
    return (np.clip(out, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8).reshape(image.shape)


def palette_strip(centres: np.ndarray, weights: np.ndarray, width: int = 512, height: int = 40) -> np.ndarray:
    """The palette as a strip: each colour as wide as its weight, sorted by brightness."""
    order = np.argsort(centres.sum(1))
    edges = np.round(np.cumsum(np.r_[0.0, weights[order]]) * width).astype(int)
    strip = np.zeros((height, width, 3), np.uint8)
    for i, idx in enumerate(order):
        strip[:, edges[i]:edges[i + 1]] = np.clip(centres[idx] * 255 + 0.5, 0, 255).astype(np.uint8)
    return strip
