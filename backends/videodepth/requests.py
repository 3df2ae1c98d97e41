"""The Video Depth capability's typed requests (torch-free: the tab and the action catalog import them;
``service`` re-exports them).

Every field a person sets is declared once here with ``backends.common.params.param`` — its range, choices,
default and one-line help — and the tab's controls, the CLI's options, the API's documented parameters and the
checks every run makes (``check_request``) are made from it. ``validate`` keeps only what relates fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backends.common.errors import InputError
from backends.common.params import check_request, param, seed_param

from .outputs import COLORMAPS

MAX_FRAMES = 3000
LONG_VIDEO = ("auto", "interpolation", "windows")
INITIAL_NOISE = ("zero", "shared", "independent")
WINDOW = 32  # frames per window: the reference infers videos of up to 32 frames in one call; stride = window − overlap
NUM_INTERP = 16  # frames the interpolation network fills between two key frames (segments of NUM_INTERP + 2)
DEFAULT_MODEL = "videodepth-embedded"


@dataclass(frozen=True)
class VideoDepthRequest:
    input_path: Path = param(help="The video (mp4, webm, mov, avi, mkv), image (png, jpg) or folder of frame images "
                                  "whose depth is estimated (an upload in the tab and the API).")
    out_dir: Path  # where the run streams its outputs and its resume state (a replay's --out)
    # the model, by registry id: part of the request so a run card names it
    model_id: str = param(DEFAULT_MODEL, label="Model", cli=("--model",),
                          help="The depth model, by registry id (`iclr25-studio models list`): the embedded one trained "
                               "here, or the paper's Depth Any Video once downloaded.")
    max_side: int = param(64, minimum=8, maximum=1024, step=8, label="Max resolution (longer side; embedded: 64)",
                          help="Frames are scaled so their longer side is at most this many pixels; larger is slower.")
    num_inference_steps: int = param(3, minimum=1, maximum=3, label="Euler steps (paper: 1–3)", cli=("--steps",),
                                     help="Flow-matching Euler steps per window; 3: steadiest, 1: 3× faster.")
    window: int = param(WINDOW, minimum=2, maximum=WINDOW, label="Window (frames)",
                        help="Frames inferred jointly in one call (the reference's 32 at most).")
    # key frames every 24 frames: the embedded model's best on selection clips (its model card)
    stride: int = param(WINDOW - 8, minimum=1, maximum=WINDOW - 1, label=f"Key-frame stride (window {WINDOW})",
                        help=f"Frames between key frames (less than the window); the frames between are filled in from "
                             f"them (the interpolation network: a stride of at most {NUM_INTERP + 1}).")
    max_keys: int = param(32, minimum=2, maximum=64, label="Max key frames",
                          help="At most this many key frames, spread over the whole video, are inferred jointly.")
    max_frames: int = param(600, minimum=1, maximum=MAX_FRAMES, label="Max frames",
                            help="Only the first this many frames of the video are estimated.")
    seed: int = seed_param("Used only when the initial noise is random (shared or independent).")
    initial_noise: str = param("zero", choices=INITIAL_NOISE, label="Initial noise",
                               help="How each window's disparity latent starts. zero: every frame starts from the "
                                    "noise's mean (deterministic, steadiest on the embedded model); shared: one random "
                                    "map for all frames; independent: a new map per frame (the reference's sampling).")
    colormap: str = param("Spectral", choices=COLORMAPS, label="Colour map",
                          help="How depth is coloured in the video; the raw depth is in the downloads.")
    baseline_frames: int = param(24, minimum=0, maximum=96, label="Per-frame baseline frames (flicker score)",
                                 help="Frames also estimated one by one, to score the flicker the video model avoids "
                                      "(0: skip).")
    # continue the stopped run whose state is in out_dir. Through the action a request to resume a folder that
    # holds no stopped run (a replay's fresh --out) starts at the first frame: a resumed run has the frames
    # of an uninterrupted one, so its run card replays to the same depth
    resume: bool = param(False, help="Continue the stopped run in the output folder (same input and settings).")
    fps: float = param(24.0, minimum=1.0, maximum=240.0, label="Frames per second",
                       help="Frame rate of a folder of frames (a video keeps its own).")
    # how videos longer than one window run: "interpolation" (key frames + the interpolation UNet, the paper's),
    # "windows" (key frames + windows aligned to them), "auto" (the model's better one: long_video_method)
    long_video: str = param("auto", choices=LONG_VIDEO, label="Long videos",
                            help="interpolation: the paper's interpolation network fills the segments between key "
                                 f"frames; windows: windows of {WINDOW} aligned to the key frames; auto: the model's "
                                 "better one on held-out clips (see its model card), windows when the stride is too "
                                 "long to interpolate.")

    def settings(self) -> dict:
        """What decides the depth values (a resumed run must match them)."""
        return {k: getattr(self, k) for k in ("model_id", "max_side", "num_inference_steps", "window", "overlap",
                                              "max_keys", "max_frames", "seed", "initial_noise", "long_video")}

    @property
    def overlap(self) -> int:
        """Frames two neighbouring windows share: the window less the key-frame stride."""
        return self.window - self.stride

    @property
    def interp_overlap(self) -> int:
        """Overlap of interpolation segments (``NUM_INTERP`` + 2 frames) for the same key-frame stride as the
        windows: the reference's 6 at a stride of 12."""
        return NUM_INTERP + 2 - self.stride

    @property
    def interp_fits(self) -> bool:
        """Whether the key-frame stride leaves segments the interpolation network can fill (stride ≤ 17)."""
        return 0 < self.interp_overlap < NUM_INTERP + 2

    def validate(self) -> None:
        """What relates the fields (each field's own range is ``check_request``'s): a clear InputError for settings
        no run can use, before anything is read or copied."""
        if self.stride >= self.window:
            raise InputError(f"The key-frame stride ({self.stride}) must be less than the window ({self.window} "
                             "frames).")
        if self.long_video == "interpolation" and not self.interp_fits:
            raise InputError(f"The interpolation network fills at most {NUM_INTERP} frames between key frames: "
                             f"choose a key-frame stride between 1 and {NUM_INTERP + 1}, or the windows method.")


def checked(request):
    """``request`` with every declared field checked (and coerced) and its ``validate()`` passed: what an action
    does before its work (``Action.run_here``), for the light actions that run without one."""
    check_request(request)
    validate = getattr(request, "validate", None)
    if callable(validate):
        validate()
    return request


def legacy_fields(data: dict) -> dict:
    """A saved request's fields as this version names them: before the key-frame stride was a field, requests held
    the windows' overlap (stride = window − overlap)."""
    if "overlap" in data and "stride" not in data:
        data = dict(data)
        data["stride"] = int(data.get("window", WINDOW)) - int(data.pop("overlap"))
    return data


def input_file(value) -> Path:
    """The path of an uploaded (or picked) file, or a clear message when there is none."""
    if not value:
        raise InputError("Upload a video or an image first (or pick an example).")
    return Path(value)


@dataclass(frozen=True)
class PointCloudRequest:
    input_path: Path  # the run's input (its colours)
    npz: Path  # the run's disparity.npz
    out_dir: Path
    frame: int = param(0, minimum=0, maximum=MAX_FRAMES - 1, label="Frame for the point cloud",
                       help="Which frame of the finished run becomes the 3D point cloud (0: the first).")
