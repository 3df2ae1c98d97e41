"""Editable regions: random free-form masks (training and baselines) and mask cleanup for user drawings."""

from __future__ import annotations

import numpy as np

from backends.common.errors import InputError


def random_freeform_mask(rng: np.random.Generator, size: int = 32, coverage: tuple[float, float] = (0.1, 0.5)) -> np.ndarray:
    """Brush strokes and blocks, like I2SB's free-form masks, with a coverage in ``coverage`` (bool size×size)."""
    target = rng.uniform(*coverage)
    mask = np.zeros((size, size), bool)
    yy, xx = np.mgrid[:size, :size]
    for _ in range(200):
        if mask.mean() >= target:
            break
        if rng.random() < 0.3:
            h, w = rng.integers(size // 8, size // 2, 2)
            y, x = rng.integers(0, size - h), rng.integers(0, size - w)
            mask[y:y + h, x:x + w] = True
            continue
        y, x = rng.uniform(0, size, 2)
        radius = rng.uniform(size / 32, size / 10)
        angle = rng.uniform(0, 2 * np.pi)
        for _ in range(rng.integers(4, 12)):
            angle += rng.normal(0, 0.6)
            step = rng.uniform(size / 16, size / 6)
            for t in np.linspace(0, 1, 6):
                cy, cx = y + t * step * np.sin(angle), x + t * step * np.cos(angle)
                mask |= (yy - cy) ** 2 + (xx - cx) ** 2 <= radius**2
            y, x = np.clip(y + step * np.sin(angle), 0, size - 1), np.clip(x + step * np.cos(angle), 0, size - 1)
    return mask


def dilate(mask: np.ndarray, pixels: int = 1) -> np.ndarray:
    out = mask.copy()
    for _ in range(pixels):
        grown = out.copy()
        grown[1:] |= out[:-1]
        grown[:-1] |= out[1:]
        grown[:, 1:] |= out[:, :-1]
        grown[:, :-1] |= out[:, 1:]
        out = grown
    return out


def resize_mask(mask: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Resize a drawn mask (any H×W, bool or 0..255) to ``size`` = (H, W): a pixel is editable when
    any part of it was painted, so thin strokes survive downscaling."""
    from PIL import Image

    m = np.asarray(mask)
    if m.ndim == 3:
        m = m.max(-1)
    if m.ndim != 2:
        raise InputError(f"A mask must be a 2-D image, got shape {m.shape}.")
    m = (m > 0).astype(np.float32)
    if m.shape == tuple(size):
        return m > 0
    out = np.asarray(Image.fromarray(m).resize((size[1], size[0]), Image.BOX))
    return out > 1e-3
