"""Raw outputs of a counterfactual run, written the same way by the tab and the CLI.

A run folder holds ``original.png`` and ``mask.png`` (what the model saw, at its size),
``counterfactual_<k>.png``, ``difference_<k>.png`` (|Δ| summed over channels, scaled to the run's
largest change) and ``region.png`` (the original with the region's outline); ``Action.write_run``
adds ``run.json`` (the request, the predictions and per-sample metrics), which
``iclr25-studio replay run.json`` reproduces pixel for pixel.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from backends.common.imageio import save_png

if TYPE_CHECKING:
    from .service import CounterfactualResult

OUTLINE_RGB = (255, 0, 80)


def difference_map(image: np.ndarray, original: np.ndarray) -> np.ndarray:
    """|image − original| summed over channels, scaled to its maximum, as a grey H×W×3 uint8 image."""
    diff = np.abs(image.astype(int) - original.astype(int)).sum(-1)
    grey = (np.clip(diff / max(1, diff.max()), 0, 1) * 255).astype(np.uint8)
    return np.repeat(grey[..., None], 3, -1)


def region_outline(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The image with the region's border pixels drawn in the outline colour."""
    m = mask.astype(bool)
    inner = np.roll(m, 1, 0) & np.roll(m, -1, 0) & np.roll(m, 1, 1) & np.roll(m, -1, 1)
    out = image.copy()
    out[m & ~inner] = OUTLINE_RGB
    return out


def write_files(result: CounterfactualResult, folder: Path) -> dict[str, Path]:
    """Every image of the run into ``folder``; name → path (the run card is ``Action.write_run``'s)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"original": save_png(result.original, folder / "original.png"),
             "mask": save_png((result.mask * 255).astype(np.uint8), folder / "mask.png")}
    for k, s in enumerate(result.samples):
        paths[f"counterfactual_{k + 1}"] = save_png(s.image, folder / f"counterfactual_{k + 1}.png")
        paths[f"difference_{k + 1}"] = save_png(difference_map(s.image, result.original),
                                                folder / f"difference_{k + 1}.png")
    paths["region"] = save_png(region_outline(result.original, result.mask), folder / "region.png")
    return paths
