"""Text editing by patching the localized layers: prompt A generated while those layers take B's K/V.

Same noise, so what the other layers draw (background, layout, colours) stays and the text becomes
B (``py-xis/t2i: src/edit_*.py``; patching from the model's start step: SDXL 4 of 50, SD3 2 of 28,
IF 2 of 50). The plain prompt-swap regeneration (prompt B from the same noise) comes for free —
it is the recording run — and is returned as the baseline. With a user region (a box in image
pixels), the result outside it is the original image, and the result says so.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from backends.common.errors import InputError
from backends.common.imageio import to_uint8
from backends.common.progress import CancelToken, ProgressEvent

from . import service
from .metrics import psnr
from .requests import EditRequest
from .service import Reading, Reporter, call_kwargs, prompt_for, read_out


@dataclass
class EditResult:
    original: np.ndarray  # prompt A, unpatched
    edited: np.ndarray  # prompt A with the layers patched (blended outside the region when one was given)
    prompt_swap: np.ndarray  # prompt B from the same noise (the baseline)
    difference: np.ndarray  # |edited − original| as an H×W×3 uint8 heat map
    readings_original: list[Reading]
    readings_edited: list[Reading]  # against the new text
    layers: list[str]
    start_step: int
    region: tuple[int, int, int, int] | None
    blended_outside_region: bool
    note: str
    psnr_outside_region: float | None  # edited vs original outside the region (None without one)
    model: str
    device: str
    seconds: float


def region_mask(shape: tuple[int, int], region: tuple[int, int, int, int]) -> np.ndarray:
    """H×W bool mask of a box (clipped to the image)."""
    h, w = shape
    x0, y0, x1, y1 = region
    if x0 >= w or y0 >= h:
        raise InputError(f"The region {region} lies outside the {w}×{h} image.")
    m = np.zeros((h, w), bool)
    m[max(0, y0):min(h, y1), max(0, x0):min(w, x1)] = True
    return m


def difference_map(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mean absolute difference per pixel, white (none) → red (large), scaled to the largest change."""
    d = np.abs(a.astype(np.float64) - b.astype(np.float64)).mean(-1)
    n = d / d.max() if d.max() > 0 else d
    out = np.empty((*d.shape, 3), np.uint8)
    out[..., 0] = 255
    out[..., 1] = out[..., 2] = np.round(255 * (1 - n)).astype(np.uint8)
    return out


def edit(request: EditRequest, cancel: CancelToken | None = None, loaded=None) -> Iterator[ProgressEvent | EditResult]:
    request.validate()
    t0 = time.perf_counter()
    yield ProgressEvent(0.0, f"loading {request.model}")
    pipe, _, rules = loaded or service.load_pipeline(request.model)
    layers = [layer.name for layer in pipe.resolve_layers(request.chosen_layers)]
    a, b = prompt_for(request.template, request.text), prompt_for(request.template, request.new_text)

    def work(report):
        rep = Reporter(report)
        original = pipe(a, **request.pipe_kwargs(), **call_kwargs(pipe, rep, 0.0, 0.3, "original"))
        out = pipe(a, patch_prompt=b, patch_layers=layers, patch_start_step=request.start_step,
                   **request.pipe_kwargs(), **call_kwargs(pipe, rep, 0.3, 0.9, "editing"))
        return (to_uint8(original.images)[0], to_uint8(out.images)[0], to_uint8(out.source_images)[0],
                out.patched_layers)

    result = yield from service.stream_action(work, cancel)
    original, edited, swap, patched = result
    preset = {layer.name for layer in pipe.resolve_layers(request.preset.edit_layers)}
    which = "The model's preset layers" if set(layers) == preset else "The chosen layers"
    note = f"{which} {', '.join(layers)} took the K/V of “{request.new_text}” from step {request.start_step} on."
    if not patched:
        note = f"Nothing was patched: the start step {request.start_step} is not before the last step."
    outside = None
    if request.region is not None:
        m = region_mask(original.shape[:2], request.region)
        edited = np.where(m[..., None], edited, original)
        outside = psnr(edited, original, mask=~m) if (~m).any() else None
        note += " Outside the drawn region the image is the original (blended)."
    yield ProgressEvent(0.95, "reading the text")
    yield EditResult(original, edited, swap, difference_map(edited, original),
                     read_out(original, request.text, rules.ocr_detect),
                     read_out(edited, request.new_text, rules.ocr_detect), layers, request.start_step, request.region,
                     request.region is not None, note, outside, request.model, str(pipe.device),
                     time.perf_counter() - t0)
