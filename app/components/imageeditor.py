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


def editor_picture(value):
    """An image editor's picture over white (uint8 H×W×3), or None when nothing was uploaded or drawn.

    The event takes its inputs undecoded (``preprocess=False``): the picture is a file reference, read here, so a
    file that is not an image is the backend's clear message rather than Gradio's decoding error."""
    from backends.common.imageio import to_rgb_array

    if not isinstance(value, dict):
        return None
    picture = value.get("composite") or value.get("background")
    if isinstance(picture, dict):
        picture = picture.get("path")
    if picture is None:
        return None
    if isinstance(picture, str):
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(picture) as pil:
                picture = np.asarray(pil.convert("RGBA"))
        except (UnidentifiedImageError, OSError):
            to_rgb_array(picture)  # raises the suite's message for a file that is not an image
            raise
    arr = np.asarray(picture)
    if arr.ndim == 3 and arr.shape[2] == 4:
        alpha = arr[..., 3:4].astype(np.float64) / 255.0
        if not alpha.any():
            return None
        arr = (arr[..., :3] * alpha + 255.0 * (1.0 - alpha)).round().astype(np.uint8)
    return arr if arr.size else None
