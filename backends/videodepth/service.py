"""The Video Depth backend entry point: a video (or image) file in, raw and viewable depth out.

``estimate_depth(request)`` is a long-work generator (``backends.common.progress``): it streams the
input's frames through ``longvideo.stream_depth`` at the model's working resolution and streams the
outputs to disk as frames finish — an H.264 side-by-side video (input | colour-mapped disparity),
one 16-bit PNG per frame (zipped), and the whole disparity stack as ``.npz`` (written through a
disk-backed array) — so memory does not grow with the video's length. It yields progress events
and, last, a :class:`VideoDepthResult`. Videos longer than one window run either the paper's key-frame
interpolation (a model with an interpolation UNet) or windows aligned to key frames; ``long_video`` picks
one, and ``"auto"`` takes the model's better one (``AUTO_LONG_VIDEO``, from the held-out bench).

A run keeps its state in its output folder after every window (``resume.json`` + ``resume_state.npz``),
so a stopped run continues with ``resume=True`` and gives the same frames as an uninterrupted one.
``estimate_run`` says what a run will cost before it starts: frames, windows, and time and memory
measured on one window of the loaded model at the run's size.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from backends.common import files
from backends.common.errors import InputError
from backends.common.imageio import open_image
from backends.common.ood import DomainCheck, check_inputs
from backends.common.pipecopy import for_request
from backends.common.progress import CancelToken, ProgressEvent, stream_reports
from backends.common.registry import default_registry
from backends.common.video import iter_video_frames, probe_video, write_mp4

from .interpolation import NUM_INTERP, key_plan, segments, stream_depth_interpolated
from .longvideo import StreamState, WindowPlan, stream_depth
from .models import REAL_MODEL, default_model  # noqa: F401 (torch-free; re-exported)
from .outputs import FILES, colorize, flicker_score, png16_bytes, quantize16
from .requests import LONG_VIDEO, MAX_FRAMES, PointCloudRequest, VideoDepthRequest, checked  # noqa: F401 (re-exported)

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".webp"}
MAX_ASPECT = 8.0
DOMAIN_FRAMES = 8  # frames (spread over the clip) the out-of-domain score takes the median of


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
    flicker: float | None = None  # ours, on the first ``flicker_frames`` frames (outputs.flicker_score)
    baseline_flicker: float | None = None  # the same model frame by frame, same frames
    flicker_frames: int = 0
    device: str = "cpu"
    seconds: float = 0.0
    resumed_at: int = 0  # frames already done when this run started (0: a fresh run)
    domain: DomainCheck | None = None  # how far the frames are from the embedded model's world (None: not checked)

    @property
    def notice(self) -> str:
        """Beyond the embedded model's world: what it knows and the real model that would serve."""
        return self.domain.notice if self.domain is not None else ""


@dataclass
class RunEstimate:
    frames: int
    source_size: tuple[int, int]
    size: tuple[int, int]  # working (width, height)
    fps: float
    truncated: bool
    windows: int
    key_frames: int
    seconds: float  # expected wall time of the run
    peak_extra_mb: float  # measured extra resident memory of the largest network call
    resident_mb: float  # resident memory of this process now (model loaded)
    per_frame_ms: float  # measured network time per frame at this size and step count
    device: str
    model_id: str

    def summary(self) -> str:
        trunc = f" (first {self.frames} only)" if self.truncated else ""
        return (f"{self.frames} frame(s){trunc} of {self.source_size[0]}×{self.source_size[1]} at "
                f"{self.fps:.3g} fps → depth at {self.size[0]}×{self.size[1]} · {self.windows} window(s) + "
                f"{self.key_frames} key frames · estimated **{self.seconds:.0f} s** and **≈{self.peak_extra_mb:.0f} MB** "
                f"above the {self.resident_mb:.0f} MB in use (measured: {self.per_frame_ms:.0f} ms per frame on "
                f"`{self.device}`, `{self.model_id}`)")


def working_size(width: int, height: int, max_side: int, multiple: int) -> tuple[int, int]:
    """Size with the longer side ≤ ``max_side``, both sides multiples of ``multiple`` (at least one)."""
    if min(width, height) < 1 or max(width, height) / min(width, height) > MAX_ASPECT:
        raise InputError(f"A {width}×{height} picture is too thin; the aspect ratio must be at most {MAX_ASPECT:g}:1.")
    s = max_side / max(width, height)
    return (max(multiple, int(width * s) // multiple * multiple), max(multiple, int(height * s) // multiple * multiple))


def _open_source(path: Path, max_frames: int, folder_fps: float = 24.0):
    """(frame-iterator factory, frame count, fps, source size, truncated) for a video, an image or a folder."""
    if path.is_dir():
        return _open_folder(path, max_frames, folder_fps)
    if not path.is_file():
        raise InputError(f"Input file not found: {path.name}.")
    if path.suffix.lower() in IMAGE_SUFFIXES:
        try:
            img = open_image(path)
            if max(img.size) > 16384:
                raise InputError(f"{path.name} is {img.width}×{img.height}; images may be at most 16384 pixels a side.")
            img.load()
        except OSError as e:
            raise InputError(f"{path.name} is not an image this suite can read ({e.__class__.__name__}).") from None
        frame = np.asarray(img.convert("RGB"))
        return (lambda: iter([frame])), 1, 1.0, img.size, False
    info = probe_video(path, max_side=1024)
    n = sum(1 for _ in zip(range(max_frames + 1), iter_video_frames(path, max_side=64), strict=False))
    if n == 0:
        raise InputError(f"{path.name} contains no video frames.")
    return (lambda: iter_video_frames(path, 1024, stop=max_frames)), min(n, max_frames), info.fps, info.source_size, n > max_frames


def _open_folder(folder: Path, max_frames: int, fps: float = 24.0):
    """A folder of images (sorted by name) as the frames of one video, read one at a time."""
    paths = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not paths:
        raise InputError(f"The folder {folder.name} holds no images ({', '.join(sorted(IMAGE_SUFFIXES))}).")
    used = paths[:max_frames]
    try:
        with open_image(used[0]) as first:
            size = first.size
    except OSError:
        raise InputError(f"{used[0].name} is not an image this suite can read.") from None
    if max(size) > 16384:
        raise InputError(f"{used[0].name} is {size[0]}×{size[1]}; images may be at most 16384 pixels a side.")

    def frames():
        for p in used:
            try:
                with open_image(p) as img:
                    frame = np.asarray(img.convert("RGB"))
            except OSError:
                raise InputError(f"{p.name} is not an image this suite can read.") from None
            if (frame.shape[1], frame.shape[0]) != size:
                raise InputError(f"{p.name} is {frame.shape[1]}×{frame.shape[0]}; every frame of the folder must be "
                                 f"{size[0]}×{size[1]} like {used[0].name}.")
            yield frame

    return frames, len(used), fps, size, len(paths) > max_frames


def _source_id(path: Path, frames: int) -> dict:
    files = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES) if path.is_dir() else [path]
    return {"name": path.name, "bytes": sum(p.stat().st_size for p in files), "frames": frames}


# What "auto" runs for a model that has both: the path with the better held-out scores. The embedded model's
# interpolation net is behind its aligned windows of 32 on 12 held-out 128-frame clips (AbsRel +0.005, TAE
# +0.0003: its model card), so the windows stay its default; other models run their interpolation net.
AUTO_LONG_VIDEO = {"videodepth-embedded": "windows"}


def long_video_method(request: VideoDepthRequest, pipe, n_frames: int) -> str:
    """``"interpolation"`` or ``"windows"``: how a video of ``n_frames`` frames runs. A video of at most one
    window is one joint call either way (``"windows"``), as the reference infers short videos whole."""
    has_interp = getattr(pipe, "unet_interp", None) is not None
    if request.long_video == "interpolation" and not has_interp:
        raise InputError(f"{request.model_id} has no interpolation network; choose the windows method.")
    if n_frames <= request.window or request.long_video == "windows" or not has_interp:
        return "windows"
    if request.long_video == "auto":  # a stride the interpolation network cannot fill runs the windows
        return AUTO_LONG_VIDEO.get(request.model_id, "interpolation") if request.interp_fits else "windows"
    return "interpolation"


def estimate_depth(request: VideoDepthRequest, pipe=None,
                   cancel: CancelToken | None = None) -> Iterator[ProgressEvent | VideoDepthResult]:
    """Stream ``request.input_path`` through the model; yield progress events (one per window), then the result."""
    checked(request)
    if pipe is None:
        from .loading import model_for

        pipe = model_for(request.model_id)
    pipe = for_request(pipe)  # its own scheduler: an estimate or another run may step the shared one meanwhile
    return stream_reports(lambda report: run_depth(request, pipe, report, cancel), cancel)


_CALIBRATION: dict[tuple, tuple[float, float]] = {}


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _measure_call(pipe, frames: int, size: tuple[int, int], steps: int) -> tuple[float, float]:
    """(seconds, peak extra resident MB) of one network call on ``frames`` frames — sampled, cached.

    It runs on a fresh thread, as a run does (``stream_reports``): torch's thread pool behaves differently
    on a long-lived thread of a busy machine, and the estimate must time what the run will see.
    """
    key = (id(pipe), frames, size, steps)
    if key not in _CALIBRATION:
        w, h = size
        clip = np.random.default_rng(0).integers(0, 256, (frames, h, w, 3), dtype=np.uint8)
        measured: list = []

        def measure():
            try:
                measured.append(timed())
            except Exception as e:  # noqa: BLE001 — re-raised on the caller's thread
                measured.append(e)

        def timed() -> tuple[float, float]:
            run = for_request(pipe)  # its own scheduler: a run may be stepping the shared one meanwhile
            run(clip[:1], num_inference_steps=1)  # warm-up: the first call of a size pays one-time costs
            before, peak, done = _rss_mb(), [0.0], threading.Event()

            def sample():
                while not done.wait(0.005):
                    peak[0] = max(peak[0], _rss_mb())

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            start = time.perf_counter()
            run(clip, position_ids=np.arange(frames), num_inference_steps=steps)
            seconds = time.perf_counter() - start
            done.set()
            sampler.join()
            return seconds, max(0.0, max(peak[0], _rss_mb()) - before)

        worker = threading.Thread(target=measure, name="videodepth-estimate")
        worker.start()
        worker.join()
        if isinstance(measured[0], Exception):
            raise measured[0]
        _CALIBRATION[key] = measured[0]
    return _CALIBRATION[key]


def estimate_run(request: VideoDepthRequest, pipe=None) -> RunEstimate:
    """What a run of ``request`` will cost: read the input's length and size, then time one window of
    the model (and one single frame, for the baseline) at the working size, and scale by the plan."""
    checked(request)
    if pipe is None:
        from .loading import model_for

        pipe = model_for(request.model_id)
    _, n, fps, (sw, sh), truncated = _open_source(Path(request.input_path), request.max_frames, request.fps)
    size = working_size(sw, sh, request.max_side, pipe.size_multiple)
    if long_video_method(request, pipe, n) == "interpolation":
        windows = segments(n, NUM_INTERP, request.interp_overlap)
        keys = len(key_plan(n, NUM_INTERP, request.interp_overlap))
        largest = max(min(keys, request.max_keys), windows[0][1] - windows[0][0])  # the interp UNet costs the same
    else:
        plan = WindowPlan(n, request.window, request.overlap, request.max_keys)
        windows = plan.windows
        keys = len(plan.key_frames) if len(windows) > 1 else 0
        largest = max(keys, windows[0][1] - windows[0][0])
    t_big, mem = _measure_call(pipe, largest, size, request.num_inference_steps)
    t_one, _ = _measure_call(pipe, 1, size, request.num_inference_steps)
    per_frame = t_big / largest
    frames_through_net = keys + sum(b - a for a, b in windows)
    seconds = per_frame * frames_through_net + t_one * min(n, request.baseline_frames) + 0.01 * n
    return RunEstimate(n, (sw, sh), size, fps, truncated, len(windows), keys, seconds, mem, _rss_mb(),
                       per_frame * 1000, str(pipe.device), request.model_id)


def run_depth(request: VideoDepthRequest, pipe, report: Callable[[ProgressEvent], None] | None = None,
              cancel: CancelToken | None = None) -> VideoDepthResult:
    """The work of :func:`estimate_depth`, reporting through ``report``. The output folder is locked for the
    run (``files.FolderLock``); what a killed run left half-written there is removed first."""
    out = Path(request.out_dir)
    files.remove_partials(out)
    with files.FolderLock(out):
        return _run_depth(request, pipe, report, cancel)


def _run_depth(request: VideoDepthRequest, pipe, report: Callable[[ProgressEvent], None] | None = None,
               cancel: CancelToken | None = None) -> VideoDepthResult:
    started = time.perf_counter()
    path = Path(request.input_path)
    open_frames, n, fps, (sw, sh), truncated = _open_source(path, request.max_frames, request.fps)
    w, h = working_size(sw, sh, request.max_side, pipe.size_multiple)
    method = long_video_method(request, pipe, n)
    out = Path(request.out_dir)
    pngs = out / "png16"
    stack_path, state_json, state_npz = out / "disparity.npy", out / "resume.json", out / "resume_state.npz"
    source = _source_id(path, n)
    resume = None
    if request.resume:
        try:
            saved = json.loads(state_json.read_text())
        except (OSError, json.JSONDecodeError):
            raise InputError("There is no stopped run to resume here; start a new run.") from None
        if saved["settings"] != request.settings() or saved["source"] != source:
            raise InputError("The stopped run used another input or other settings; resume it with the same "
                             "ones, or start a new run.")
        if state_npz.is_file() and stack_path.is_file():
            with np.load(state_npz) as a:
                resume = StreamState.from_arrays(a)
    done = resume.emitted if resume else 0
    if resume is None:
        shutil.rmtree(pngs, ignore_errors=True)
    pngs.mkdir(exist_ok=True)
    for stale in pngs.glob("depth_*.png"):  # frames of a window that was cut short are redone
        if int(stale.stem.split("_")[1]) >= done:
            stale.unlink()
    if resume is None:
        state_npz.unlink(missing_ok=True)
    files.write_text(state_json, json.dumps({"settings": request.settings(), "source": source, "emitted": done}))
    with files.disk_errors(stack_path):
        stack = np.lib.format.open_memmap(stack_path, mode="r+" if resume else "w+", dtype=np.float16, shape=(n, h, w))
    if resume is None:  # the whole stack's space now: a full disk is a message here, not a crash mid-run
        files.reserve(stack_path, stack_path.stat().st_size)
    if stack.shape != (n, h, w):
        raise InputError("The stopped run's saved depth does not match this input; start a new run.")

    def resized():
        for f in open_frames():
            yield np.asarray(Image.fromarray(f).resize((w, h), Image.Resampling.BOX))

    checked = set(np.linspace(0, n - 1, min(n, DOMAIN_FRAMES)).round().astype(int).tolist()) if embedded(request.model_id) else set()
    seen: list[np.ndarray] = []

    def kept(frames):
        """The frames as the model sees them; the ones the domain check scores are kept on the way."""
        for i, f in enumerate(frames):
            if i in checked:
                seen.append(f)
            yield f

    latest: list[np.ndarray | None] = [None]

    def progress(a, b):
        if report:
            report(ProgressEvent(a / (b + 1), f"window {a} of {b}", latest[0]))

    def save_state(state: StreamState) -> None:
        stack.flush()
        with files.atomic_path(state_npz) as tmp, open(tmp, "wb") as f:
            np.savez(f, **state.to_arrays())
        files.write_text(state_json, json.dumps({"settings": request.settings(), "source": source,
                                                 "emitted": state.emitted}))

    def side_by_side():
        frames = kept(resized())
        for i in range(done):  # a resumed run re-encodes the frames it already has
            q = np.asarray(Image.open(pngs / f"depth_{i:05d}.png"))
            yield np.concatenate([next(frames), colorize(q / 65535.0, request.colormap)], 1)
        if method == "interpolation":
            depth = stream_depth_interpolated(pipe, resized, n, NUM_INTERP, request.interp_overlap, request.max_keys,
                                              request.num_inference_steps, request.seed, on_segment=progress,
                                              cancel=cancel,
                                              resume=resume, on_state=save_state, initial_noise=request.initial_noise)
        else:
            depth = stream_depth(pipe, resized, n, request.window, request.overlap, request.max_keys,
                                 request.num_inference_steps, request.seed, on_window=progress,
                                 cancel=cancel,
                                 resume=resume, on_state=save_state, initial_noise=request.initial_noise)
        for i, disp in depth:
            if cancel:
                cancel.raise_if_cancelled()
            q = quantize16(disp)
            stack[i] = disp
            files.write_bytes(pngs / f"depth_{i:05d}.png", png16_bytes(disp))
            frame = np.concatenate([next(frames), colorize(q / 65535.0, request.colormap)], 1)
            latest[0] = frame
            yield frame

    video_path = out / FILES["video"]
    write_mp4(side_by_side(), video_path, fps=fps)
    stack.flush()
    k = min(n, request.baseline_frames) if n > 1 else 0
    ours = baseline = None
    if k >= 2:
        if report:
            report(ProgressEvent(1.0, f"per-frame baseline on the first {k} frames (flicker score)", latest[0]))
        rgb = np.stack([f for _, f in zip(range(k), resized(), strict=False)])
        single = []
        for i in range(k):
            if cancel:
                cancel.raise_if_cancelled()
            single.append(pipe(rgb[i:i + 1], position_ids=[i], num_inference_steps=request.num_inference_steps,
                               generator=torch.Generator().manual_seed(request.seed),
                               initial_noise=request.initial_noise).disparity[0])
        ours, baseline = flicker_score(np.asarray(stack[:k], np.float32), rgb), flicker_score(np.stack(single), rgb)
    stack = None  # unmap before the file is zipped and removed
    png_zip = out / FILES["png_zip"]
    with files.atomic_path(png_zip) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as z:
        for i in range(n):
            z.write(pngs / f"depth_{i:05d}.png", f"depth_{i:05d}.png")
    npz = out / FILES["npz"]
    with files.atomic_path(npz) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(stack_path, "disparity.npy")
    for f in (state_json, state_npz):  # finished: from here on it is no longer a stopped run
        f.unlink(missing_ok=True)
    tidy_finished(out)
    notes = [f"first {n} frames of the video only"] if truncated else []
    if n > request.window:
        notes.append("long video: jointly inferred key frames, segments between them filled by the interpolation "
                     "network" if method == "interpolation" else "long video: windows aligned to jointly inferred "
                     "key frames, overlaps cross-faded" + ("" if getattr(pipe, "unet_interp", None) is not None
                                                           else " (this model has no interpolation network)"))
    if done:
        notes.append(f"resumed at frame {done}")
    domain = check_inputs("videodepth", seen) if seen else None  # every run, the CLI's too; the run went ahead
    if domain is not None and domain.notice:
        notes.append(domain.notice)
    return VideoDepthResult(request.model_id, n, (w, h), fps, video_path, png_zip, npz, truncated, notes,
                            ours, baseline, k, str(pipe.device), time.perf_counter() - started, done, domain)


def embedded(model_id: str) -> bool:
    """Is this one of the project's own models (trained on the primitive world only)?"""
    try:
        return default_registry().get(model_id).source == "embedded"
    except KeyError:
        return False


def tidy_finished(out_dir: Path) -> None:
    """Remove a finished run's working files (per-frame PNGs, the raw stack) — also what a run killed
    between writing its outputs and tidying up left behind. A stopped run keeps them: it resumes from them."""
    out = Path(out_dir)
    if (out / "resume.json").exists() or not (out / FILES["npz"]).exists():
        return
    shutil.rmtree(out / "png16", ignore_errors=True)
    (out / "disparity.npy").unlink(missing_ok=True)


def stopped_run(out_dir: Path) -> dict | None:
    """The saved progress of a stopped run in ``out_dir`` (settings, source, frames done), or None."""
    try:
        return json.loads((Path(out_dir) / "resume.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None


@dataclass
class PointCloudResult:
    frame: int
    points: int
    ply: Path  # coloured points, binary .ply
    viewer: str  # JSON for the page's three.js viewer (outputs.viewer_payload)


def frame_point_cloud(request: PointCloudRequest) -> PointCloudResult:
    """One frame of a finished run as a coloured point cloud (relative depth; ``outputs.NEAR_FAR`` assumed)."""
    from .outputs import ply_bytes, point_cloud, viewer_payload

    checked(request)
    try:
        with np.load(request.npz) as z:
            stack = z["disparity"]
    except (OSError, KeyError, ValueError):
        raise InputError("Run the depth estimation first; there is no finished run to show.") from None
    n = len(stack)
    if not 0 <= request.frame < n:
        raise InputError(f"Frame {request.frame} does not exist; this run has frames 0 to {n - 1}.")
    h, w = stack.shape[1:]
    open_frames, *_ = _open_source(Path(request.input_path), request.frame + 1)
    rgb = next(f for i, f in enumerate(open_frames()) if i == request.frame)
    rgb = np.asarray(Image.fromarray(rgb).resize((w, h), Image.Resampling.BOX))
    xyz, colours = point_cloud(stack[request.frame].astype(np.float32), rgb)
    out = Path(request.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ply = out / f"frame_{request.frame:05d}.ply"
    files.write_bytes(ply, ply_bytes(xyz, colours))
    return PointCloudResult(request.frame, len(xyz), ply, viewer_payload(xyz, colours, f"frame {request.frame}"))
