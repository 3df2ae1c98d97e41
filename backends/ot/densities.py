"""Images as densities on a grid, and the displacement (McCann) interpolation of a transport plan between them.

An image becomes an m×m density: its grey level (bright or dark carries the mass), resized to m×m, normalised to
sum 1. The interpolation at time t moves each plan entry's mass P_ij from x_i towards y_j: it lands at
(1 − t) x_i + t y_j and is splatted bilinearly onto the grid (entries under 1e-12 of the mass are left out).
"""

from __future__ import annotations

import numpy as np

from backends.common.errors import InputError

PLAN_FLOOR = 1e-12


def as_density(image, side: int, mass_where: str = "bright", name: str = "image") -> tuple[np.ndarray, list[str]]:
    """An image (path, PIL, array) or a non-negative 2-D array → (m×m density summing to 1, notes on what changed)."""
    from PIL import Image

    from backends.common.imageio import to_rgb_array

    notes: list[str] = []
    arr = np.asarray(image) if isinstance(image, np.ndarray) else None
    if arr is not None and arr.ndim == 2 and arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise InputError(f"The {name} has values that are not finite (NaN or infinite).")
        if (arr < 0).any():
            raise InputError(f"The {name} has negative values: a density has no negative mass.")
        grey = arr.astype(np.float64)
        if mass_where == "dark":
            grey = grey.max() - grey
    else:
        rgb = to_rgb_array(image)
        grey = rgb.astype(np.float64).mean(-1) / 255.0
        if mass_where == "dark":
            grey = 1.0 - grey
    h, w = grey.shape
    if (h, w) != (side, side):
        notes.append(f"the {name} ({w}×{h}) was resized to {side}×{side}" + (" (its aspect changed)" if h != w else ""))
        top = grey.max()
        scaled = grey / top if top > 0 else grey
        grey = np.asarray(Image.fromarray(scaled.astype(np.float32), mode="F").resize((side, side), Image.BOX),
                          dtype=np.float64).clip(min=0.0) * (top if top > 0 else 1.0)
    total = grey.sum()
    if not total > 0:
        raise InputError(f"The {name} has no mass (every pixel is {'white' if mass_where == 'dark' else 'black'}): "
                         "there is nothing to transport. Use another image or the other 'mass where' setting.")
    return grey / total, notes


def interpolate(plan: np.ndarray, side: int, t: float) -> np.ndarray:
    """The displacement interpolation at time t ∈ [0, 1] of an (m², m²) plan on an m×m grid: an m×m density."""
    rows, cols = np.nonzero(plan > PLAN_FLOOR * plan.sum())
    mass = plan[rows, cols]
    ya, xa = np.divmod(rows, side)
    yb, xb = np.divmod(cols, side)
    y = (1.0 - t) * ya + t * yb
    x = (1.0 - t) * xa + t * xb
    y0, x0 = np.floor(y).astype(int), np.floor(x).astype(int)
    fy, fx = y - y0, x - x0
    out = np.zeros(side * side)
    for dy, wy in ((0, 1.0 - fy), (1, fy)):
        for dx, wx in ((0, 1.0 - fx), (1, fx)):
            yy, xx = np.minimum(y0 + dy, side - 1), np.minimum(x0 + dx, side - 1)
            out += np.bincount(yy * side + xx, weights=mass * wy * wx, minlength=side * side)
    return out.reshape(side, side) / max(out.sum(), 1e-300)


def to_grey_image(density: np.ndarray, scale: float | None = None, view: int = 256) -> np.ndarray:
    """A density as an enlarged grey uint8 picture (white = most mass; ``scale`` fixes the white level)."""
    from backends.common.imageio import upscale

    top = scale if scale is not None else float(density.max())
    grey = (np.clip(density / top if top > 0 else density, 0, 1) * 255 + 0.5).astype(np.uint8)
    rgb = np.repeat(grey[..., None], 3, -1)
    return upscale(rgb, max(1, view // density.shape[0]))
