"""Image and depth io: validated loading, PNG saving, and lossless-enough 16-bit depth round trips.

Depth as a 16-bit PNG stores the map linearly between its minimum and maximum, and writes both into
the PNG's text chunk, so :func:`load_depth_png16` restores metric values (to 1/65535 of the range).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image, PngImagePlugin, UnidentifiedImageError

from .errors import InputError
from .files import atomic_path

MAX_PIXELS = 4096 * 4096


def to_rgb_array(image, max_side: int | None = None) -> np.ndarray:
    """Any image the app or CLI may hand over (path, bytes, PIL, HxW[x3|4] array) → HxWx3 uint8.

    Larger images are downscaled so the longer side is at most ``max_side``.
    """
    pil = _as_pil(image)
    _check_pixels(pil)
    if pil.width < 8 or pil.height < 8:
        raise InputError(f"Image is {pil.width}×{pil.height}; it must be at least 8×8 pixels.")
    pil = pil.convert("RGB")
    if max_side and max(pil.size) > max_side:
        scale = max_side / max(pil.size)
        pil = pil.resize((max(1, round(pil.width * scale)), max(1, round(pil.height * scale))), Image.LANCZOS)
    return np.asarray(pil, dtype=np.uint8).copy()


def _as_pil(image) -> Image.Image:
    if image is None:
        raise InputError("No image was given.")
    if isinstance(image, Image.Image):
        return image
    if isinstance(image, np.ndarray):
        return _array_to_pil(image)
    if not isinstance(image, bytes | bytearray | str | Path):
        raise InputError(f"Unsupported image input of type {type(image).__name__}.")
    try:
        pil = open_image(io.BytesIO(image) if isinstance(image, bytes | bytearray) else Path(image))
        _check_pixels(pil)  # from the header, before a huge image is decoded
        pil.load()
        return pil
    except FileNotFoundError:
        raise InputError(f"Image file not found: {Path(str(image)).name}.") from None
    except (UnidentifiedImageError, OSError) as e:
        raise InputError(f"The file is not an image this suite can read ({e.__class__.__name__}).") from None


def open_image(source) -> Image.Image:
    """``Image.open`` (lazy: only the header is read), with PIL's refusal of a decompression bomb (an image
    whose header claims hundreds of megapixels) turned into a clear :class:`InputError`."""
    try:
        return Image.open(source)
    except Image.DecompressionBombError:
        name = f"{Path(source).name} is" if isinstance(source, str | Path) else "The image is"
        raise InputError(f"{name} too large: over {2 * Image.MAX_IMAGE_PIXELS // 1_000_000} megapixels.") from None


def _check_pixels(pil: Image.Image) -> None:
    if pil.width * pil.height > MAX_PIXELS:
        raise InputError(f"Image is {pil.width}×{pil.height}; the limit is {MAX_PIXELS // 1_000_000} megapixels.")


def _array_to_pil(arr: np.ndarray) -> Image.Image:
    if arr.ndim == 2:
        arr = np.repeat(arr[..., None], 3, axis=2)
    if arr.ndim != 3 or arr.shape[2] not in (1, 3, 4):
        raise InputError(f"Image array has shape {arr.shape}; expected H×W, H×W×3 or H×W×4.")
    if arr.shape[2] == 1:
        arr = np.repeat(arr, 3, axis=2)
    if arr.dtype != np.uint8:
        if np.issubdtype(arr.dtype, np.floating) and np.nanmax(arr) <= 1.0 + 1e-6:
            arr = np.clip(np.nan_to_num(arr) * 255.0 + 0.5, 0, 255)
        arr = np.clip(arr, 0, 255).astype(np.uint8)
    return Image.fromarray(arr)


def save_png(image: np.ndarray, path: str | Path) -> Path:
    path = Path(path)
    pil = _array_to_pil(np.asarray(image))
    with atomic_path(path) as tmp:
        pil.save(tmp, format="PNG")
    return path


def save_depth_png16(depth: np.ndarray, path: str | Path) -> Path:
    """Save a float depth map as a 16-bit grayscale PNG, recording its range for a lossless-ish reload."""
    depth = _check_depth(depth)
    lo, hi = float(depth.min()), float(depth.max())
    span = hi - lo if hi > lo else 1.0
    q = np.round((depth - lo) / span * 65535.0).astype(np.uint16)
    info = PngImagePlugin.PngInfo()
    info.add_text("depth_min", repr(lo))
    info.add_text("depth_max", repr(hi))
    path = Path(path)
    with atomic_path(path) as tmp:
        Image.fromarray(q).save(tmp, format="PNG", pnginfo=info)
    return path


def load_depth_png16(path: str | Path) -> np.ndarray:
    """Read a 16-bit depth PNG; rescale to metric values when it carries ``depth_min``/``depth_max``."""
    try:
        pil = Image.open(Path(path))
        pil.load()
    except (FileNotFoundError, UnidentifiedImageError, OSError) as e:
        raise InputError(f"Cannot read depth PNG {Path(path).name}: {e.__class__.__name__}.") from None
    arr = np.asarray(pil)
    if arr.dtype not in (np.uint16, np.int32) or arr.ndim != 2:
        raise InputError(f"{Path(path).name} is not a 16-bit single-channel depth PNG (mode {pil.mode}).")
    q = arr.astype(np.float64) / 65535.0
    lo, hi = pil.text.get("depth_min"), pil.text.get("depth_max")
    if lo is None or hi is None:
        return q.astype(np.float32)
    lo, hi = float(lo), float(hi)
    return (lo + q * (hi - lo)).astype(np.float32)


def save_depth_npy(depth: np.ndarray, path: str | Path) -> Path:
    path = Path(path)
    depth = _check_depth(depth).astype(np.float32)
    with atomic_path(path) as tmp, open(tmp, "wb") as f:  # a file object: np.save adds no suffix
        np.save(f, depth)
    return path


def load_depth_npy(path: str | Path) -> np.ndarray:
    try:
        arr = np.load(Path(path), allow_pickle=False)
    except (FileNotFoundError, ValueError, OSError) as e:
        raise InputError(f"Cannot read depth array {Path(path).name}: {e.__class__.__name__}.") from None
    return _check_depth(arr).astype(np.float32)


def _check_depth(depth: np.ndarray) -> np.ndarray:
    depth = np.asarray(depth)
    if depth.ndim == 3 and depth.shape[-1] == 1:
        depth = depth[..., 0]
    if depth.ndim != 2 or depth.size == 0:
        raise InputError(f"Depth must be a non-empty H×W map, got shape {depth.shape}.")
    if not np.issubdtype(depth.dtype, np.number) or not np.isfinite(depth).all():
        raise InputError("Depth must be numeric and finite everywhere.")
    return depth.astype(np.float64)


def depth_to_colormap(depth: np.ndarray, near_bright: bool = True) -> np.ndarray:
    """A depth map as an HxWx3 uint8 picture (grayscale, near = bright by default) for display."""
    d = _check_depth(depth)
    lo, hi = d.min(), d.max()
    n = (d - lo) / (hi - lo) if hi > lo else np.zeros_like(d)
    if near_bright:
        n = 1.0 - n
    g = np.round(n * 255).astype(np.uint8)
    return np.repeat(g[..., None], 3, axis=2)


def upscale(image: np.ndarray, factor: int) -> np.ndarray:
    """Nearest-neighbour enlargement for display; an area (BOX) downscale by ``factor`` undoes it exactly."""
    if factor < 1:
        raise InputError(f"Upscale factor must be at least 1, got {factor}.")
    return np.repeat(np.repeat(np.asarray(image), factor, 0), factor, 1)


def to_uint8(images) -> np.ndarray:
    """Float images → uint8, rounded as diffusers' ``numpy_to_pil``: ``output_type="np"`` arrays in [0, 1]
    as they are; a torch tensor B×C×H×W in [-1, 1] (a pipeline's x̂0 or its output) → B×H×W×C."""
    if hasattr(images, "detach"):  # torch, channels first, [-1, 1]
        import torch

        return ((images.detach().clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
    return (np.asarray(images) * 255).round().astype(np.uint8)
