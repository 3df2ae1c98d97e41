"""Synthetic video-depth clips: the Depth Any Video recipe (train on rendered video with exact depth) in
the primitive world.

Each clip is one random room with textured primitives (``backends.synth``), a random camera path
(orbit, dolly, truck, pan or still, often with hand-held shake), some objects sliding and turning,
and random lighting. Every frame comes with exact z-depth, the camera's intrinsics and world → camera
extrinsics, and a mask of static pixels (what TAE's reprojection may use). Training draws windows of
1–16 frames with random strides, so the model sees single images, short and long clips, slow and
fast motion — the paper's mixed-duration, mixed-frame-rate training.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from backends.common.datacache import cached_arrays
from backends.synth import Camera, Scene, random_scene, random_texture, render
from backends.synth.camera import dolly_path, handheld_shake, orbit_path, pan_path, truck_path

SIZE = 64  # frames are SIZE × SIZE
CLIP_FRAMES = 24  # rendered frames per training clip
EVAL_FRAMES = 32  # rendered frames per held-out clip
EVAL_SEED_OFFSET = 1_000_000  # held-out clips use seeds from here: scenes and paths never seen in training
PATHS = ("orbit", "dolly", "truck", "pan", "still")


@dataclass
class Clip:
    rgb: np.ndarray  # T×H×W×3 uint8
    depth: np.ndarray  # T×H×W float32 z-depth (inf where nothing was hit)
    intrinsics: np.ndarray  # 3×3
    extrinsics: np.ndarray  # T×4×4 world → camera
    static: np.ndarray  # T×H×W bool: pixels of surfaces that do not move in the world


def random_camera(rng: np.random.Generator, size: int = SIZE) -> Camera:
    pos = (rng.uniform(-1.0, 1.0), rng.uniform(-3.6, -2.0), rng.uniform(0.7, 2.2))
    target = (rng.uniform(-0.7, 0.7), rng.uniform(0.6, 2.0), rng.uniform(0.05, 0.6))
    return Camera(size, size, float(rng.uniform(40, 65)), pos, target)


def camera_path(rng: np.random.Generator, camera: Camera, n_frames: int) -> list[Camera]:
    kind = PATHS[rng.integers(len(PATHS))]
    speed = rng.uniform(0.3, 1.0)
    if kind == "orbit":
        cams = orbit_path(camera, n_frames, arc_deg=float(rng.choice([-1, 1]) * 50 * speed),
                          bob=float(rng.uniform(0, 0.2)))
    elif kind == "dolly":
        cams = dolly_path(camera, n_frames, distance=float(rng.choice([-1, 1]) * 1.4 * speed))
    elif kind == "truck":
        cams = truck_path(camera, n_frames, distance=float(rng.choice([-1, 1]) * 1.6 * speed))
    elif kind == "pan":
        cams = pan_path(camera, n_frames, arc_deg=float(rng.choice([-1, 1]) * 35 * speed))
    else:
        cams = [camera] * n_frames
    if rng.random() < 0.4:
        cams = handheld_shake(cams, rng, amplitude=float(rng.uniform(0.005, 0.03)))
    return cams


def render_clip(seed: int, n_frames: int = CLIP_FRAMES, size: int = SIZE) -> Clip:
    """One random clip (deterministic in ``seed``)."""
    rng = np.random.default_rng(seed)
    camera = random_camera(rng, size)
    scene = random_scene(rng, (1, 5), camera=camera)
    textures = {i: random_texture(rng) for i in range(len(scene.objects))}
    textures["floor"] = random_texture(rng, plain_p=0.3)
    textures["wall"] = random_texture(rng, plain_p=0.3)
    light = np.array([rng.uniform(-0.8, 0.8), rng.uniform(-0.9, 0.1), rng.uniform(0.4, 1.0)])
    ambient = float(rng.uniform(0.25, 0.6))
    moving = [i for i in range(len(scene.objects)) if rng.random() < 0.3]
    velocity = {i: (rng.uniform(-0.04, 0.04), rng.uniform(-0.03, 0.03), rng.uniform(-4, 4)) for i in moving}
    cams = camera_path(rng, camera, n_frames)
    rgb = np.empty((n_frames, size, size, 3), np.uint8)
    depth = np.empty((n_frames, size, size), np.float32)
    static = np.empty((n_frames, size, size), bool)
    extrinsics = np.empty((n_frames, 4, 4), np.float32)
    for t, cam in enumerate(cams):
        frame_scene = _moved(scene, velocity, t - n_frames // 2)
        out = render(frame_scene, cam, textures=textures, light_dir=light, ambient=ambient)
        rgb[t], depth[t], extrinsics[t] = out.rgb, out.depth, cam.extrinsics
        static[t] = ~np.isin(out.instance, moving)
    return Clip(rgb, depth, camera.intrinsics.astype(np.float32), extrinsics, static)


def _moved(scene: Scene, velocity: dict, t: int) -> Scene:
    if not velocity:
        return scene
    objects = list(scene.objects)
    for i, (vx, vy, vyaw) in velocity.items():
        o = objects[i]
        objects[i] = replace(o, center=(o.center[0] + vx * t, o.center[1] + vy * t, o.center[2]),
                             yaw_deg=o.yaw_deg + vyaw * t)
    return replace(scene, objects=tuple(objects))


def make_clips(seeds: Sequence[int], n_frames: int = CLIP_FRAMES) -> dict[str, np.ndarray]:
    """Arrays of many clips (module level, so it runs in worker processes)."""
    clips = [render_clip(int(s), n_frames) for s in seeds]
    return {"rgb": np.stack([c.rgb for c in clips]), "depth": np.stack([c.depth for c in clips]).astype(np.float16),
            "intrinsics": np.stack([c.intrinsics for c in clips]), "extrinsics": np.stack([c.extrinsics for c in clips]),
            "static": np.stack([c.static for c in clips])}


def make_eval_clips(seeds: Sequence[int]) -> dict[str, np.ndarray]:
    return make_clips(seeds, EVAL_FRAMES)


def cached_clips(split: str, data_dir: Path, n_clips: int, workers: int = 2) -> dict[str, np.ndarray]:
    """``train`` (seeds 0…) or ``eval`` (held-out seeds, longer clips) clips, rendered once and cached."""
    if split == "train":
        seeds, maker = list(range(n_clips)), make_clips
    elif split == "eval":
        seeds, maker = list(range(EVAL_SEED_OFFSET, EVAL_SEED_OFFSET + n_clips)), make_eval_clips
    else:
        raise ValueError(f"unknown split {split!r}")
    return cached_arrays(Path(data_dir) / f"videodepth_{split}_{n_clips}_{SIZE}.npz", seeds, maker, workers=workers,
                         chunk=max(1, min(100, n_clips // max(1, workers))))


def disparity_target(depth: np.ndarray) -> np.ndarray:
    """Depth (…×F×H×W, inf = nothing hit) → relative disparity in [-1, 1], normalised over each clip.

    Like the paper's target: scale and shift are unknown, so only the clip's own range is used;
    nothing-hit pixels are at disparity 0 (infinitely far).
    """
    d = np.asarray(depth, dtype=np.float32)
    with np.errstate(divide="ignore"):
        disp = np.where(np.isfinite(d) & (d > 0), 1.0 / d, 0.0)
    axes = tuple(range(disp.ndim - 3, disp.ndim))
    lo, hi = disp.min(axis=axes, keepdims=True), disp.max(axis=axes, keepdims=True)
    return (2 * (disp - lo) / np.maximum(hi - lo, 1e-6) - 1).astype(np.float32)


def sample_windows(clips: dict[str, np.ndarray], rng: np.random.Generator, n_frames: int, batch: int,
                   max_stride: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``batch`` windows of ``n_frames`` frames with random strides and horizontal flips.

    Returns rgb (B×F×H×W×3 uint8), disparity targets (B×F×H×W in [-1, 1]) and the true frame
    indices (B×F) for the temporal RoPE.
    """
    n, total = clips["rgb"].shape[:2]
    rgbs, disps, positions = [], [], []
    for _ in range(batch):
        c = int(rng.integers(n))
        strides = [s for s in range(1, max_stride + 1) if (n_frames - 1) * s < total] or [1]
        s = int(rng.choice(strides))
        start = int(rng.integers(total - (n_frames - 1) * s))
        idx = start + s * np.arange(n_frames)
        rgb, depth = clips["rgb"][c, idx], clips["depth"][c, idx]
        if rng.random() < 0.5:
            rgb, depth = rgb[:, :, ::-1], depth[:, :, ::-1]
        rgbs.append(rgb)
        disps.append(disparity_target(depth))
        positions.append(idx)
    return np.stack(rgbs), np.stack(disps), np.stack(positions)


# --- the out-of-domain statistics (backends.common.ood, training/ood_calibration.py) ---------------------------
# Videos arrive through lossy codecs (the tab's own examples are H.264) and their artefacts look like the fine
# detail that tells photos apart; one JPEG round trip of every frame, reference and upload alike, gives them all
# a compression history. The statistics carry it (``DomainStats.jpeg_quality``), so the check applies it too.
OOD_JPEG_QUALITY = 95
OOD_FRAMES_PER_CLIP = 2  # frames kept per rendered clip (spread over it): frames of one clip are much alike


def ood_inputs(seed0: int, n: int = 2000, h264: bool = True) -> tuple[list[np.ndarray], None]:
    """``n`` frames of held-out clips from seed ``seed0`` on, as the model sees an upload (64×64), for the
    out-of-domain statistics; the default ``n`` is the fit split's (the video worlds vary most: paths, textures,
    lighting). ``h264``: every other clip through H.264 first, as an uploaded video arrives (like the tab's
    examples), so codec artefacts are part of the synthetic world the score knows."""
    clips = max(1, -(-n // OOD_FRAMES_PER_CLIP))
    frames = []
    for i in range(clips):
        clip = render_clip(seed0 + i, 6).rgb  # a short path
        if h264 and i % 2:
            clip = h264_round_trip(clip)
        frames.extend(clip[np.linspace(0, len(clip) - 1, OOD_FRAMES_PER_CLIP).round().astype(int)])
    return frames[:n], None


def h264_round_trip(frames: np.ndarray, fps: float = 10.0) -> np.ndarray:
    """The frames after writing them as H.264 (``common.video.write_mp4``, as the examples are) and decoding."""
    import tempfile

    from backends.common.video import iter_video_frames, write_mp4

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "clip.mp4"
        write_mp4(list(frames), path, fps=fps)
        return np.stack(list(iter_video_frames(path, 1024)))


def ood_view(image: np.ndarray, max_side: int = SIZE) -> np.ndarray:
    """A photo (H×W×3 uint8) as the embedded model sees it: the run's working size (``service.working_size``) by
    a box filter, as ``service`` resizes every frame. What the out-of-domain score of a real photo is taken of."""
    from PIL import Image

    from .service import working_size

    w, h = working_size(image.shape[1], image.shape[0], max_side, embedded_size_multiple())
    return np.asarray(Image.fromarray(np.asarray(image, np.uint8)).resize((w, h), Image.Resampling.BOX))


def embedded_size_multiple() -> int:
    """``VideoDepthPipeline.size_multiple`` of the embedded model, from its configs (without loading it)."""
    import json

    from backends.common.settings import get_settings

    folder = get_settings().assets_dir / "videodepth-embedded"
    vae, unet = (json.loads((folder / f / "config.json").read_text()) for f in ("vae", "unet"))
    factor = vae.get("patch_size") or 2 ** (len(vae["block_out_channels"]) - 1)
    return int(factor) * 2 ** (len(unet["block_out_channels"]) - 1)
