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

from backends.common.imageio import save_png, upscale

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


# --- what the tab shows: model-size pictures enlarged for the eye ----------------------------------
VIEW = 256  # the tab's editor shows the model-size image enlarged to this many pixels
MASK_RGBA = (255, 0, 80, 200)


def view_factor(size: int) -> int:
    """How many screen pixels one model pixel takes in the tab (nearest neighbour)."""
    return max(1, VIEW // size)


def enlarged(image: np.ndarray) -> np.ndarray:
    """A model-size image (or a batch's first one) at the tab's view size."""
    image = image[0] if image.ndim == 4 else image
    return upscale(image, view_factor(image.shape[0]))


def editor_layers(image: np.ndarray, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The image enlarged and an RGBA layer painting ``mask`` over it (transparent without one): an image
    editor's background and brush layer."""
    f = view_factor(image.shape[0])
    big = upscale(image, f)
    layer = np.zeros(big.shape[:2] + (4,), np.uint8)
    if mask is not None:
        layer[upscale(mask.astype(np.uint8), f).astype(bool)] = MASK_RGBA
    return big, layer


def heat_image(heat: np.ndarray) -> np.ndarray:
    """An attribution map in [0, 1] as blue (none) → red (strong), enlarged to the view size."""
    h = np.clip(heat, 0, 1)
    rgb = np.stack([h, 0.2 * h, 1 - h], -1)
    return upscale((rgb * 255).astype(np.uint8), view_factor(heat.shape[0]))


def gallery_items(result: CounterfactualResult) -> list[tuple[np.ndarray, str]]:
    """(enlarged picture, caption) for each counterfactual, its |difference| and the region on the original."""
    items = []
    for k, s in enumerate(result.samples):
        mark = "✓ flipped" if s.flipped else "✗ not flipped"
        items.append((enlarged(s.image), f"#{k + 1}: {s.predicted} ({s.target_probability:.2f} {result.target}) {mark}"))
        items.append((enlarged(difference_map(s.image, result.original)),
                      f"#{k + 1}: |difference| (L1 in region {s.l1_inside:.3f})"))
    items.append((enlarged(region_outline(result.original, result.mask)),
                  f"original: {result.original_prediction}; region {result.mask.mean():.0%}"))
    return items


def result_status(result: CounterfactualResult) -> str:
    """The run in one line (and the out-of-domain notice, if any)."""
    flipped = sum(s.flipped for s in result.samples)
    status = (f"**{flipped}/{len(result.samples)} flipped** to *{result.target}* · max change outside the region: "
              f"{max(s.max_change_outside for s in result.samples)} · {result.seconds:.1f} s · "
              f"bridge `{result.models['bridge']}`, classifier `{result.models['classifier']}` on `{result.models['device']}`")
    return status + (f"\n\n⚠️ {result.notice}" if result.notice else "")
