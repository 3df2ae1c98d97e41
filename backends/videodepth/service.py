"""The Video Depth backend entry point: a video (or image) file in, raw and viewable depth out.

``estimate_depth(request)`` is a long-work generator (``backends.common.progress``): it streams the
input's frames through ``longvideo.stream_depth`` at the model's working resolution and streams the
outputs to disk as frames finish — an H.264 side-by-side video (input | colour-mapped disparity),
one 16-bit PNG per frame (zipped), and the whole disparity stack as ``.npz`` (written through a
disk-backed array) — so memory does not grow with the video's length. It yields progress events
and, last, a :class:`VideoDepthResult`. A model with an interpolation UNet (the published one) runs
the paper's key-frame interpolation; the embedded one runs windows aligned to key frames.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from backends.common.errors import InputError
from backends.common.progress import CancelToken, ProgressEvent, stream_reports
from backends.common.video import iter_video_frames, probe_video, write_mp4

from .interpolation import stream_depth_interpolated
from .longvideo import stream_depth

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".webp"}
MAX_FRAMES = 3000
MAX_ASPECT = 8.0


@dataclass(frozen=True)
class VideoDepthRequest:
    input_path: Path
    out_dir: Path
    model_id: str = "videodepth-embedded"
    max_side: int = 64  # working resolution (longer side) — the embedded model's training size
    num_inference_steps: int = 3
    window: int = 16
    overlap: int = 4
    max_keys: int = 32
    max_frames: int = 600
    seed: int = 0
    colormap: str = "Spectral"


@dataclass
class VideoDepthResult:
    model_id: str
    frames: int
    size: tuple[int, int]  # (width, height) of the depth frames
    fps: float
    video: Path  # side-by-side H.264 mp4
    png_zip: Path  # 16-bit PNG per frame (near = bright, 0…65535 = disparity 0…1)
    npz: Path  # "disparity": F×H×W float16 in [0, 1]
    truncated: bool = False
    notes: list[str] = field(default_factory=list)


def working_size(width: int, height: int, max_side: int, multiple: int) -> tuple[int, int]:
    """Size with the longer side ≤ ``max_side``, both sides multiples of ``multiple`` (at least one)."""
    if min(width, height) < 1 or max(width, height) / min(width, height) > MAX_ASPECT:
        raise InputError(f"A {width}×{height} picture is too thin; the aspect ratio must be at most {MAX_ASPECT:g}:1.")
    s = max_side / max(width, height)
    return (max(multiple, int(width * s) // multiple * multiple), max(multiple, int(height * s) // multiple * multiple))


def _open_source(path: Path, max_frames: int):
    """(frame-iterator factory, frame count, fps, source size, truncated) for a video or an image file."""
    if not path.is_file():
        raise InputError(f"Input file not found: {path.name}.")
    if path.suffix.lower() in IMAGE_SUFFIXES:
        try:
            img = Image.open(path)
            img.load()
        except OSError as e:
            raise InputError(f"{path.name} is not an image this suite can read ({e.__class__.__name__}).") from None
        if max(img.size) > 16384:
            raise InputError(f"{path.name} is {img.width}×{img.height}; images may be at most 16384 pixels a side.")
        frame = np.asarray(img.convert("RGB"))
        return (lambda: iter([frame])), 1, 1.0, img.size, False
    info = probe_video(path, max_side=1024)
    n = sum(1 for _ in zip(range(max_frames + 1), iter_video_frames(path, max_side=64), strict=False))
    if n == 0:
        raise InputError(f"{path.name} contains no video frames.")
    return (lambda: iter_video_frames(path, 1024, stop=max_frames)), min(n, max_frames), info.fps, info.source_size, n > max_frames


def _colorize(disp: np.ndarray, cmap: str) -> np.ndarray:
    import matplotlib

    try:
        cm = matplotlib.colormaps[cmap]
    except KeyError:
        raise InputError(f"Unknown colour map {cmap!r}.") from None
    return (cm(np.clip(disp, 0, 1))[..., :3] * 255).astype(np.uint8)


def estimate_depth(request: VideoDepthRequest, pipe=None,
                   cancel: CancelToken | None = None) -> Iterator[ProgressEvent | VideoDepthResult]:
    """Stream ``request.input_path`` through the model; yield progress events (one per window), then the result."""
    if not 1 <= request.max_frames <= MAX_FRAMES:
        raise InputError(f"max_frames must be between 1 and {MAX_FRAMES}.")
    if pipe is None:
        from .loading import load_model

        pipe = load_model(request.model_id)
    return stream_reports(lambda report: run_depth(request, pipe, report, cancel), cancel)


def run_depth(request: VideoDepthRequest, pipe, report: Callable[[ProgressEvent], None] | None = None,
              cancel: CancelToken | None = None) -> VideoDepthResult:
    """The work of :func:`estimate_depth`, reporting through ``report``."""
    path = Path(request.input_path)
    open_frames, n, fps, (sw, sh), truncated = _open_source(path, request.max_frames)
    w, h = working_size(sw, sh, request.max_side, pipe.size_multiple)
    out = Path(request.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stack_path = out / "disparity.npy"
    stack = np.lib.format.open_memmap(stack_path, mode="w+", dtype=np.float16, shape=(n, h, w))

    def resized():
        for f in open_frames():
            yield np.asarray(Image.fromarray(f).resize((w, h), Image.Resampling.BOX))

    def side_by_side(pngs: zipfile.ZipFile, stack: np.ndarray):
        frames = resized()
        progress = (lambda a, b: report(ProgressEvent(a / b, f"window {a} of {b}"))) if report else None
        if getattr(pipe, "unet_interp", None) is not None:
            depth = stream_depth_interpolated(pipe, resized, n, max_keys=request.max_keys,
                                              num_inference_steps=request.num_inference_steps, seed=request.seed,
                                              on_segment=progress)
        else:
            depth = stream_depth(pipe, resized, n, request.window, request.overlap, request.max_keys,
                                 request.num_inference_steps, request.seed, on_window=progress,
                                 should_stop=(lambda: cancel.cancelled) if cancel else None)
        for i, disp in depth:
            if cancel:
                cancel.raise_if_cancelled()
            stack[i] = disp
            buf = io.BytesIO()
            Image.fromarray(np.round(disp * 65535).astype(np.uint16)).save(buf, format="PNG")
            pngs.writestr(f"depth_{i:05d}.png", buf.getvalue())
            yield np.concatenate([next(frames), _colorize(disp, request.colormap)], 1)

    video_path = out / "depth_side_by_side.mp4"
    with zipfile.ZipFile(out / "depth_png16.zip", "w", zipfile.ZIP_STORED) as pngs:
        write_mp4(side_by_side(pngs, stack), video_path, fps=fps)
    stack.flush()
    del stack
    npz = out / "disparity.npz"
    with zipfile.ZipFile(npz, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(stack_path, "disparity.npy")
    stack_path.unlink()
    notes = [f"first {n} frames of the video only"] if truncated else []
    notes.append("long video: key frames + interpolation network" if getattr(pipe, "unet_interp", None) is not None
                 else "long video: windows aligned to jointly inferred key frames, overlaps cross-faded "
                      "(this model has no interpolation network)")
    return VideoDepthResult(request.model_id, n, (w, h), fps, video_path, out / "depth_png16.zip", npz, truncated, notes)
