"""Reading a Gradio ImageEditor value: shared by every tab where the user paints a region on an image."""

from __future__ import annotations

import numpy as np

from backends.common.errors import InputError


def editor_to_image_and_mask(value) -> tuple[np.ndarray, np.ndarray | None]:
    """The background as H×W×3 and the union of the painted layers as an H×W bool mask (``None``: no layers)."""
    if not isinstance(value, dict) or value.get("background") is None:
        raise InputError("Load an image first (upload one or pick an example).")
    background = np.asarray(value["background"])[..., :3]
    layers = [np.asarray(layer) for layer in value.get("layers") or [] if layer is not None]
    mask = None
    if layers:
        mask = np.zeros(background.shape[:2], bool)
        for layer in layers:
            alpha = layer[..., 3] if layer.ndim == 3 and layer.shape[-1] == 4 else layer.reshape(layer.shape[0], layer.shape[1], -1).max(-1)
            mask |= alpha[: mask.shape[0], : mask.shape[1]] > 0
    return background, mask
