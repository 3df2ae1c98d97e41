"""The Avatar capability's typed requests (torch-free: the tab and the action catalog import them; the
service re-exports them). A run card holds a request's fields, so the models are named here by id."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from backends.common.errors import InputError
from backends.common.params import param

from .models import EMBEDDED_MODEL, PUBLISHED_MODEL
from .params import Phenotype, Pose

MAX_RENDER_SIZE = 1024
MAX_VIDEO_SIZE = 512
MAX_VIDEO_FRAMES = 240
VIEW_DISTANCE = 3.5  # metres from the body's centre: the whole of a tall person in the 40° view
RENDER_LEVELS = 2  # subdivisions of the rendering mesh at inference (the paper: 2; training: 1)
MAX_PHOTOS = 5
DEFAULT_FOV = 40.0  # a photo's vertical field of view when none is given (degrees; fit.DEFAULT_FOV)
MAX_SUBJECT = 999_999  # synthetic subjects 0…999999 (held-out seeds)
MAX_VIEWS = 5
RENDERERS = ("auto", "fast", "torch", "gsplat")
VIDEO_KINDS = ("turntable", "animation")


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

    subject: int | None = param(0, minimum=0, maximum=MAX_SUBJECT, label="Subject (held out)",
                                help="Which held-out synthetic person (any number; none was seen in training); "
                                     "empty when the views are uploaded.")
    upload: UploadedViews | None = param(None, help="Your own views of one person: images, masks, cameras and pose "
                                                    "(checked by backends.avatar.uploads).")
    n_views: int = param(3, minimum=1, maximum=MAX_VIEWS, label="Views", cli=("--views",),
                         help="How many views of a synthetic subject the model sees (sparse: 1–5).")
    iterations: int = param(3, minimum=1, maximum=5, label="Feedback iterations (paper: 3)",
                            help="Rounds of iterative feedback refining the avatar: more is sharper and slower.")
    model: str = param(EMBEDDED_MODEL, label="Reconstructor",
                       help=f"{EMBEDDED_MODEL!r} (trained here; 1–5 views) or {PUBLISHED_MODEL!r} (the authors' "
                            "published checkpoint, offered when it and your SMPL-X file are in the models folder; "
                            "exactly 3 views at 1024²: minutes on a CPU); the CLI also takes a checkpoint folder.")
    levels: int = param(RENDER_LEVELS, minimum=0, maximum=3, label="Subdivision levels",
                        help="Subdivisions of the rendering mesh (one Gaussian per face; the paper: 2).")
    size: int | None = param(None, minimum=32, maximum=MAX_RENDER_SIZE, label="Input size", cli=("--input-size",),
                             help="The views' resolution in pixels (empty: the model's own; embedded 64², "
                                  "published 1024²).")
    models_dir: str | None = None  # the models folder to resolve registry models in (None: the settings')
    pose: Pose | None = param(None, help="The pose the avatar's posed files (.ply, meshes) are written in and the "
                                         "viewer starts in (empty: the pose of its views).")

    def validate(self) -> None:
        if (self.subject is None) == (self.upload is None):
            raise InputError("Choose either a synthetic subject or uploaded views, not both (nor neither).")
        if self.model not in (EMBEDDED_MODEL, PUBLISHED_MODEL) and not Path(self.model).is_dir():
            raise InputError(f"Unknown avatar model {self.model!r}: use {EMBEDDED_MODEL!r}, {PUBLISHED_MODEL!r} "
                             "or a checkpoint folder.")


@dataclass(frozen=True)
class PhotosRequest:
    """Photos of one person (H×W×3 uint8 each): MediaPipe finds the body and its mask in each, and one
    body (pose, shape, a camera per photo) is fitted to all of them (``from_photos.prepare``)."""

    photos: list[np.ndarray] = param(help=f"Photos of one person (1–{MAX_PHOTOS}), the whole body, head to feet, "
                                          "in each.")
    names: list[str] = param(help="The photos' file names, one per photo (how the fit names them).")
    fov_deg: float = param(DEFAULT_FOV, minimum=10.0, maximum=120.0, label="Field of view (°)", cli=("--fov",),
                           help="The photos' vertical field of view in degrees (a phone's main camera: about 40–50).")
    steps: int = param(150, minimum=1, maximum=2000, label="Fit steps", cli=("--fit-steps",),
                       help="Optimiser steps of the body fit (pose, shape and a camera per photo).")

    def validate(self) -> None:
        if not 1 <= len(self.photos) <= MAX_PHOTOS:
            raise InputError(f"Upload 1 to {MAX_PHOTOS} photos of one person, not {len(self.photos)}.")
        if len(self.names) != len(self.photos):
            raise InputError(f"{len(self.photos)} photo(s) but {len(self.names)} name(s): give one name per photo.")


def _azimuth(default: float):
    return param(default, minimum=-180.0, maximum=180.0, step=5, label="Camera azimuth (°)", cli=("--azimuth",),
                 help="Where the camera stands around the person: 0 = in front, 90 = at their left.")


def _avatar_file():
    return param(None, help="The avatar: the avatar.safetensors a reconstruction wrote.")


def _background():
    return param((1.0, 1.0, 1.0), help="The background colour: three numbers from 0 to 1 (red, green, blue).")


@dataclass(frozen=True)
class RenderRequest:
    """A novel view of an avatar (``avatar``: its file; the tab names the session's) in a pose, from an orbit camera."""

    pose: Pose = param(default_factory=Pose, help="The pose to render the avatar in (pose sliders in degrees).")
    # 30°: between two of a synthetic subject's input views, a view the model did not see
    azimuth_deg: float = _azimuth(30.0)
    height: float = param(0.1, minimum=-2.0, maximum=3.0, label="Camera height (m)",
                          help="The camera's height above the body's centre in metres.")
    distance: float = param(VIEW_DISTANCE, minimum=1.0, maximum=10.0, label="Camera distance (m)",
                            help="The camera's distance from the body's centre in metres (3.5: the whole of a tall "
                                 "person in the 40° view).")
    size: int = param(512, minimum=16, maximum=MAX_RENDER_SIZE, step=16, label="Size (px)",
                      help="Rendered image size in pixels (square); larger takes longer.")
    background: tuple[float, float, float] = _background()
    backend: str = param("auto", choices=RENDERERS, label="Renderer", cli=("--renderer",),
                         help="auto: gsplat on CUDA, else the compiled CPU tile renderer (fast); or torch, the "
                              "reference rasterizer.")
    ground_truth: bool = param(True, label="Ground truth",
                               help="Synthetic subjects: ray-cast the true person beside the render (and its PSNR).")
    avatar: Path | None = _avatar_file()  # the action's input (a saved avatar)

    def validate(self) -> None:
        _check_background(self.background)


@dataclass(frozen=True)
class VideoRequest:
    """A turntable (the camera circles the posed person) or an animation (the pose moves through the presets)."""

    kind: str = param("turntable", choices=VIDEO_KINDS, label="Video",
                      help="turntable: the camera circles the posed person; animation: the avatar moves through the "
                           "presets.")
    pose: Pose = param(default_factory=Pose, help="The turntable's pose (pose sliders in degrees; an animation "
                                                   "moves through the presets).")
    azimuth_deg: float = _azimuth(0.0)
    frames: int = param(48, minimum=2, maximum=MAX_VIDEO_FRAMES, step=2, label="Frames",
                        help="Frames in the video: more is smoother and takes longer.")
    size: int = param(256, minimum=32, maximum=MAX_VIDEO_SIZE, label="Video size (px)",
                      help="The video's frame size in pixels (square).")
    fps: float = param(24.0, minimum=1.0, maximum=60.0, label="Frame rate", help="Frames per second of the video.")
    background: tuple[float, float, float] = _background()
    avatar: Path | None = _avatar_file()  # the action's input: an avatar.safetensors (what a reconstruction wrote)
    out: Path | None = None  # the action's output folder (a replay's --out)

    def validate(self) -> None:
        _check_background(self.background)


@dataclass(frozen=True)
class ExportRequest:
    """An avatar's raw files in a pose: 3DGS .ply, posed mesh (.obj, .ply) and the avatar itself."""

    pose: Pose = param(default_factory=Pose, help="The pose the files are written in (pose sliders in degrees).")
    avatar: Path | None = _avatar_file()


@dataclass(frozen=True)
class ExampleRequest:
    """An upload example: ray-cast views of a synthetic subject, their masks and cameras.json (what the upload takes)."""

    subject: int = param(0, minimum=0, maximum=MAX_SUBJECT, label="Subject (held out)",
                         help="Which held-out synthetic person the example shows.")
    n_views: int = param(3, minimum=1, maximum=MAX_VIEWS, label="Views", cli=("--views",),
                         help="How many views (images, masks, cameras) the example has.")
    size: int = param(128, minimum=32, maximum=MAX_RENDER_SIZE, label="Image size (px)",
                      help="The views' size in pixels (square).")


def _check_background(background) -> None:
    if len(background) != 3 or not all(isinstance(c, int | float) and 0.0 <= c <= 1.0 for c in background):
        raise InputError("The background is three numbers between 0 and 1.")
