"""The Avatar capability's typed requests (torch-free: the tab and the action catalog import them; the
service re-exports them). A run card holds a request's fields, so the models are named here by id."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from backends.common.errors import InputError

from .models import EMBEDDED_MODEL, PUBLISHED_MODEL
from .params import Phenotype, Pose

MAX_RENDER_SIZE = 1024
MAX_VIDEO_SIZE = 512
MAX_VIDEO_FRAMES = 240
VIEW_DISTANCE = 3.5  # metres from the body's centre: the whole of a tall person in the 40° view
RENDER_LEVELS = 2  # subdivisions of the rendering mesh at inference (the paper: 2; training: 1)
MAX_PHOTOS = 5
DEFAULT_FOV = 40.0  # a photo's vertical field of view when none is given (degrees; fit.DEFAULT_FOV)


@dataclass
class UploadedViews:
    """Parsed, checked uploads: N views of one person in one pose."""

    images: np.ndarray  # N×H×W×3 float32 in [0, 1]
    masks: np.ndarray  # N×H×W float32 in {0, 1}
    viewmats: np.ndarray  # N×4×4 world → camera
    Ks: np.ndarray  # N×3×3
    pose: Pose
    phenotype: Phenotype
    names: list[str]


@dataclass(frozen=True)
class ReconstructRequest:
    """A synthetic subject (``subject``: 0, 1, 2, … → held-out seeds) or ``upload`` (checked views)."""

    subject: int | None = 0
    upload: UploadedViews | None = None
    n_views: int = 3
    iterations: int = 3
    model: str = EMBEDDED_MODEL
    levels: int = RENDER_LEVELS
    size: int | None = None  # input resolution; None: the model's own (embedded 64², published 1024²)
    models_dir: str | None = None  # the models folder to resolve registry models in (None: the settings')
    pose: Pose | None = None  # the pose the avatar's posed files (.ply, meshes) are written in; None: its views'

    def validate(self) -> None:
        if (self.subject is None) == (self.upload is None):
            raise InputError("Choose either a synthetic subject or uploaded views, not both (nor neither).")
        if self.subject is not None and not (isinstance(self.subject, int) and 0 <= self.subject < 1_000_000):
            raise InputError(f"The subject number must be between 0 and 999999, not {self.subject!r}.")
        if not 1 <= self.n_views <= 5:
            raise InputError(f"The avatar is reconstructed from 1 to 5 views, not {self.n_views}.")
        if not 1 <= self.iterations <= 5:
            raise InputError(f"Feedback iterations must be 1 to 5 (the paper uses 3), not {self.iterations}.")
        if not 0 <= self.levels <= 3:
            raise InputError(f"Subdivision levels must be 0 to 3, not {self.levels}.")
        if self.model not in (EMBEDDED_MODEL, PUBLISHED_MODEL) and not Path(self.model).is_dir():
            raise InputError(f"Unknown avatar model {self.model!r}: use {EMBEDDED_MODEL!r}, {PUBLISHED_MODEL!r} "
                             "or a checkpoint folder.")
        if self.size is not None and not 32 <= self.size <= MAX_RENDER_SIZE:
            raise InputError(f"The input size must be 32 to {MAX_RENDER_SIZE} pixels, not {self.size}.")


@dataclass(frozen=True)
class PhotosRequest:
    """Photos of one person (H×W×3 uint8 each): MediaPipe finds the body and its mask in each, and one
    body (pose, shape, a camera per photo) is fitted to all of them (``from_photos.prepare``)."""

    photos: list[np.ndarray]
    names: list[str]
    fov_deg: float = DEFAULT_FOV
    steps: int = 150

    def validate(self) -> None:
        if not 1 <= len(self.photos) <= MAX_PHOTOS:
            raise InputError(f"Upload 1 to {MAX_PHOTOS} photos of one person, not {len(self.photos)}.")
        if len(self.names) != len(self.photos):
            raise InputError(f"{len(self.photos)} photo(s) but {len(self.names)} name(s): give one name per photo.")
        if not 10.0 <= float(self.fov_deg) <= 120.0:
            raise InputError(f"The photos' field of view must be 10 to 120 degrees, not {self.fov_deg:g}.")
        if not isinstance(self.steps, int) or not 1 <= self.steps <= 2000:
            raise InputError(f"The fit takes 1 to 2000 steps, not {self.steps!r}.")


@dataclass(frozen=True)
class RenderRequest:
    pose: Pose = field(default_factory=Pose)
    azimuth_deg: float = 0.0  # 0 = in front of the person, 90 = at their left
    height: float = 0.1  # camera height above the body's centre, metres
    distance: float = VIEW_DISTANCE
    size: int = 512
    background: tuple[float, float, float] = (1.0, 1.0, 1.0)
    backend: str = "auto"  # auto: gsplat on CUDA, else the compiled CPU tile renderer; or fast / torch
    ground_truth: bool = True  # synthetic subjects: ray-cast the true person beside the render

    def validate(self) -> None:
        if not 16 <= self.size <= MAX_RENDER_SIZE:
            raise InputError(f"Render size must be 16 to {MAX_RENDER_SIZE} pixels, not {self.size}.")
        if not 1.0 <= self.distance <= 10.0:
            raise InputError(f"Camera distance must be 1 to 10 metres, not {self.distance}.")
        if not -2.0 <= self.height <= 3.0:
            raise InputError(f"Camera height must be -2 to 3 metres, not {self.height}.")
        if self.backend not in ("auto", "fast", "torch", "gsplat"):
            raise InputError(f"Unknown renderer {self.backend!r}: auto, fast, torch or gsplat.")
        if len(self.background) != 3 or not all(0.0 <= c <= 1.0 for c in self.background):
            raise InputError("The background is three numbers between 0 and 1.")


@dataclass(frozen=True)
class VideoRequest:
    kind: str = "turntable"  # turntable: the camera circles; animation: the pose moves through the presets
    pose: Pose = field(default_factory=Pose)  # the turntable's pose (animation: its camera azimuth below)
    azimuth_deg: float = 0.0
    frames: int = 48
    size: int = 256
    fps: float = 24.0
    background: tuple[float, float, float] = (1.0, 1.0, 1.0)
    avatar: Path | None = None  # the action's input: an avatar.safetensors (what a reconstruction wrote)
    out: Path | None = None  # the action's output folder (a replay's --out)

    def validate(self) -> None:
        if self.kind not in ("turntable", "animation"):
            raise InputError(f"Unknown video kind {self.kind!r}: turntable or animation.")
        if not 2 <= self.frames <= MAX_VIDEO_FRAMES:
            raise InputError(f"A video has 2 to {MAX_VIDEO_FRAMES} frames, not {self.frames}.")
        if not 32 <= self.size <= MAX_VIDEO_SIZE:
            raise InputError(f"Video size must be 32 to {MAX_VIDEO_SIZE} pixels, not {self.size}.")
        if not 1 <= self.fps <= 60:
            raise InputError(f"Video frame rate must be 1 to 60, not {self.fps}.")
