"""The Video Depth capability's typed requests (torch-free: the tab and the action catalog import them;
``service`` re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backends.common.errors import InputError

from .outputs import COLORMAPS

MAX_FRAMES = 3000
LONG_VIDEO = ("auto", "interpolation", "windows")
WINDOW = 32  # frames per window: the reference infers videos of up to 32 frames in one call; stride = window − overlap
NUM_INTERP = 16  # frames the interpolation network fills between two key frames (segments of NUM_INTERP + 2)


@dataclass(frozen=True)
class VideoDepthRequest:
    input_path: Path  # a video, an image or a folder of frame images
    out_dir: Path  # where the run streams its outputs and its resume state (a replay's --out)
    model_id: str = "videodepth-embedded"  # the model, by registry id: part of the request so a run card names it
    max_side: int = 64  # working resolution (longer side) — the embedded model's training size
    num_inference_steps: int = 3
    window: int = WINDOW
    overlap: int = 8  # key-frame stride 24 (the embedded model's best on selection clips: its model card)
    max_keys: int = 32
    max_frames: int = 600
    seed: int = 0  # used when the initial noise is random ("shared" or "independent")
    initial_noise: str = "zero"  # how each window's disparity latent starts (VideoDepthPipeline.__call__)
    colormap: str = "Spectral"
    baseline_frames: int = 24  # the per-frame baseline runs on this many first frames (flicker score); 0 = off
    # continue the stopped run whose state is in out_dir. Through the action a request to resume a folder that
    # holds no stopped run (a replay's fresh --out) starts at the first frame: a resumed run has the frames
    # of an uninterrupted one, so its run card replays to the same depth
    resume: bool = False
    fps: float = 24.0  # frame rate of a folder of frames (a video keeps its own)
    # how videos longer than one window run: "interpolation" (key frames + the interpolation UNet, the paper's),
    # "windows" (key frames + windows aligned to them), "auto" (the model's better one: long_video_method)
    long_video: str = "auto"

    def settings(self) -> dict:
        """What decides the depth values (a resumed run must match them)."""
        return {k: getattr(self, k) for k in ("model_id", "max_side", "num_inference_steps", "window", "overlap",
                                              "max_keys", "max_frames", "seed", "initial_noise", "long_video")}

    @property
    def stride(self) -> int:
        """Frames between key frames: a window less its overlap."""
        return self.window - self.overlap

    @property
    def interp_overlap(self) -> int:
        """Overlap of interpolation segments (``NUM_INTERP`` + 2 frames) for the same key-frame stride as the
        windows (``window − overlap``): the reference's 6 at the default stride of 12."""
        return NUM_INTERP + 2 - self.stride

    @property
    def interp_fits(self) -> bool:
        """Whether the key-frame stride leaves segments the interpolation network can fill (stride ≤ 17)."""
        return 0 < self.interp_overlap < NUM_INTERP + 2

    def validate(self) -> None:
        """A clear InputError for settings no run can use (before anything is read or copied)."""
        if not 1 <= self.max_frames <= MAX_FRAMES:
            raise InputError(f"max_frames must be between 1 and {MAX_FRAMES}.")
        if not 8 <= self.max_side <= 1024:
            raise InputError("The maximum resolution must be between 8 and 1024 pixels.")
        if not 0 <= self.baseline_frames <= 200:
            raise InputError("The per-frame baseline may run on 0 to 200 frames.")
        if self.colormap not in COLORMAPS:
            raise InputError(f"Unknown colour map {self.colormap!r}; choose one of {', '.join(COLORMAPS)}.")
        if self.window < 2:
            raise InputError(f"Window {self.window} and overlap {self.overlap}: need 0 < overlap < window, window ≥ 2.")
        if not 1 <= self.stride < self.window:
            raise InputError(f"The key-frame stride must be between 1 and {self.window - 1} frames.")
        if self.long_video not in LONG_VIDEO:
            raise InputError(f"Unknown long-video method {self.long_video!r}; choose one of {', '.join(LONG_VIDEO)}.")
        if self.long_video == "interpolation" and not self.interp_fits:
            raise InputError(f"The interpolation network fills at most {NUM_INTERP} frames between key frames: "
                             f"choose a key-frame stride between 1 and {NUM_INTERP + 1}, or the windows method.")


def input_file(value) -> Path:
    """The path of an uploaded (or picked) file, or a clear message when there is none."""
    if not value:
        raise InputError("Upload a video or an image first (or pick an example).")
    return Path(value)


@dataclass(frozen=True)
class PointCloudRequest:
    input_path: Path  # the run's input (its colours)
    npz: Path  # the run's disparity.npz
    frame: int
    out_dir: Path
