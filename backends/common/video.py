"""Video io through the ffmpeg that ships with imageio-ffmpeg.

The writer makes H.264 / yuv420p / faststart .mp4 — the one combination every Chromium plays — and
pads odd sizes to even. The reader caps frames and size so a long or huge upload cannot exhaust memory;
``iter_video_frames`` and ``write_mp4`` (which takes any iterable) stream frames one at a time, so a
long video is processed at the memory of a few frames.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import DiskFullError, InputError
from .files import atomic_path, free_mb, is_disk_full

LOW_DISK_MB = 16  # an encode that fails with less free space than this failed for want of space

# imageio-ffmpeg logs a warning whenever the output size differs from the source: that is our intent.
logging.getLogger("imageio_ffmpeg").setLevel(logging.ERROR)


@dataclass
class VideoClip:
    frames: np.ndarray  # T×H×W×3 uint8
    fps: float
    source_size: tuple[int, int]  # (width, height) of the file
    source_frames: int | None  # frames in the file when ffmpeg could tell
    truncated: bool  # True when max_frames cut the video short


def write_mp4(frames: Iterable[np.ndarray], path: str | Path, fps: float = 24.0, crf: int = 18) -> Path:
    """Encode RGB uint8 frames (all of one size) as an H.264 .mp4 that plays in browsers."""
    if not 0 < fps <= 240:
        raise InputError(f"Frame rate must be between 0 and 240, got {fps}.")
    path = Path(path)
    with atomic_path(path) as tmp:  # a cut-short encode leaves no half-written .mp4 behind
        try:
            count = _encode(frames, tmp, fps, crf)
        except OSError as e:
            # ffmpeg runs in its own process: its "No space left on device" reaches us as a broken pipe
            if not is_disk_full(e) and free_mb(path.parent) < LOW_DISK_MB:
                raise DiskFullError(path.name, free_mb(path.parent)) from e
            raise
        if count == 0:
            raise InputError("A video needs at least one frame.")
    return path


def _encode(frames: Iterable[np.ndarray], path: Path, fps: float, crf: int) -> int:
    import imageio_ffmpeg

    writer = None
    size = None
    count = 0
    try:
        for frame in frames:
            frame = _as_rgb_frame(frame)
            if size is None:
                size = frame.shape[:2]
                h, w = size
                writer = imageio_ffmpeg.write_frames(
                    str(path), (w + w % 2, h + h % 2), fps=fps, codec="libx264", pix_fmt_in="rgb24",
                    pix_fmt_out="yuv420p", macro_block_size=1, quality=None,
                    output_params=["-crf", str(crf), "-movflags", "+faststart", "-preset", "veryfast"],
                    ffmpeg_log_level="error",
                )
                writer.send(None)
            elif frame.shape[:2] != size:
                raise InputError(f"Frame {count} is {frame.shape[1]}×{frame.shape[0]}, expected {size[1]}×{size[0]}.")
            h, w = size
            if h % 2 or w % 2:
                frame = np.pad(frame, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")
            writer.send(np.ascontiguousarray(frame))
            count += 1
    finally:
        if writer is not None:
            writer.close()
    return count


@dataclass(frozen=True)
class VideoInfo:
    fps: float
    source_size: tuple[int, int]  # (width, height) of the file
    size: tuple[int, int]  # (width, height) of the frames as read (after max_side)
    source_frames: int | None  # frames in the file when ffmpeg could tell


def probe_video(path: str | Path, max_side: int | None = 512) -> VideoInfo:
    """Frame rate, sizes and length of a video file, without decoding its frames."""
    import imageio_ffmpeg

    path = Path(path)
    if not path.is_file():
        raise InputError(f"Video file not found: {path.name}.")
    try:
        probe = imageio_ffmpeg.read_frames(str(path))
        meta = next(probe)
        probe.close()
    except (RuntimeError, OSError, StopIteration) as e:
        raise InputError(f"{path.name} is not a video this suite can read ({_first_line(e)}).") from None
    if not meta.get("size"):
        raise InputError(f"{path.name} has no video stream.")
    w, h = (int(v) for v in meta["size"])
    fps = float(meta.get("fps") or 24.0)
    duration = float(meta.get("duration") or 0.0)
    total = round(duration * fps) if duration > 0 and np.isfinite(duration) else None
    return VideoInfo(fps, (w, h), _fit(w, h, max_side), total)


def iter_video_frames(path: str | Path, max_side: int | None = 512, start: int = 0,
                      stop: int | None = None) -> Iterator[np.ndarray]:
    """Decode RGB frames ``start``…``stop``-1 one at a time (H×W×3 uint8), downscaled to ``max_side``.

    Only one frame is held at a time, so a video of any length reads at the memory of one frame.
    """
    import imageio_ffmpeg

    path = Path(path)
    info = probe_video(path, max_side)
    out_w, out_h = info.size
    params = ["-vf", f"scale={out_w}:{out_h}:flags=area"] if info.size != info.source_size else None
    reader = imageio_ffmpeg.read_frames(str(path), output_params=params)
    try:
        out_w, out_h = (int(v) for v in next(reader)["size"])
        for i, raw in enumerate(reader):
            if stop is not None and i >= stop:
                break
            if i >= start:
                yield np.frombuffer(raw, dtype=np.uint8).reshape(out_h, out_w, 3)
    except RuntimeError as e:
        raise InputError(f"{path.name} could not be decoded ({_first_line(e)}).") from None
    finally:
        reader.close()


def read_video(path: str | Path, max_frames: int = 300, max_side: int | None = 512) -> VideoClip:
    """Decode up to ``max_frames`` RGB frames, downscaled so the longer side is at most ``max_side``."""
    path = Path(path)
    if max_frames < 1:
        raise InputError("max_frames must be at least 1.")
    info = probe_video(path, max_side)
    frames: list[np.ndarray] = []
    truncated = False
    for frame in iter_video_frames(path, max_side):
        if len(frames) == max_frames:
            truncated = True
            break
        frames.append(frame)
    if not frames:
        raise InputError(f"{path.name} contains no video frames.")
    return VideoClip(np.stack(frames), info.fps, info.source_size, info.source_frames, truncated)


def _fit(w: int, h: int, max_side: int | None) -> tuple[int, int]:
    if not max_side or max(w, h) <= max_side:
        return w, h
    s = max_side / max(w, h)
    return max(2, round(w * s / 2) * 2), max(2, round(h * s / 2) * 2)


def _as_rgb_frame(frame: np.ndarray) -> np.ndarray:
    frame = np.asarray(frame)
    if frame.ndim == 2:
        frame = np.repeat(frame[..., None], 3, axis=2)
    if frame.ndim != 3 or frame.shape[2] != 3:
        raise InputError(f"Video frames must be H×W×3, got {frame.shape}.")
    if frame.dtype != np.uint8:
        frame = np.clip(frame, 0, 255).astype(np.uint8)
    return frame


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[-1][:200] if text else e.__class__.__name__
