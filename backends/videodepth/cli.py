"""``iclr25-studio videodepth``: depth of a video, an image or a folder of frames, files out.

    iclr25-studio videodepth --input clip.mp4 --out depth/
    iclr25-studio videodepth --input frames/ --fps 12 --out depth/ --ply-frame 10
    iclr25-studio videodepth --input clip.mp4 --out depth/ --resume      # after Ctrl-C or a crash
    iclr25-studio videodepth --resume-run 3f2a9c0b1d4e                   # a run the app started, by its id

The tab's action (``actions.ESTIMATE_DEPTH``, through ``run_action``): writes depth_side_by_side.mp4,
depth_png16.zip (16-bit PNG per frame), disparity.npz and the run card run.json (with a copy of the
input, input_<name>) into --out, and with --ply-frame a .ply of that frame. Progress goes to stderr, one
JSON line with the run's summary (``outputs.run_summary``) to stdout; ``iclr25-studio replay
out/run.json --out again/`` gives the same depth. A run stopped by Ctrl-C keeps its state in --out;
``--resume`` with the same input and settings continues it.
``--resume-run ID`` continues a run the app started (stopped, or cut short by a restart) in its own run
folder, with its saved input and settings (``runstore``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .outputs import COLORMAPS

HELP = "Depth Any Video: depth of a video, image or folder of frames (mp4, 16-bit PNGs, npz)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", type=Path, help="a video, an image, or a folder of frame images (required)")
    p.add_argument("--out", type=Path, help="output folder (required)")
    p.add_argument("--resume", action="store_true", help="continue the stopped run in --out (same input and settings)")
    p.add_argument("--resume-run", metavar="ID", help="continue the app's run ID in its run folder, with its own input "
                                                       "and settings (instead of --input/--out)")
    p.add_argument("--model", default="videodepth-embedded", help="model id (see `models list`)")
    p.add_argument("--max-side", type=int, default=64, help="working resolution, longer side (embedded model: 64)")
    p.add_argument("--steps", type=int, default=1, help="flow-matching Euler steps (paper: 1-3)")
    p.add_argument("--window", type=int, default=16, help="frames per window")
    p.add_argument("--stride", type=int, default=12, help="key-frame stride (window minus overlap)")
    p.add_argument("--max-frames", type=int, default=600, help="read at most this many frames")
    p.add_argument("--colormap", default="Spectral", choices=COLORMAPS)
    p.add_argument("--baseline-frames", type=int, default=24,
                   help="run the per-frame baseline on this many first frames for the flicker score (0: off)")
    p.add_argument("--seed", type=int, default=0, help="used when the initial noise is random")
    p.add_argument("--initial-noise", choices=("zero", "shared", "independent"), default="zero",
                   help="how each window's disparity latent starts (zero: deterministic, the default)")
    p.add_argument("--fps", type=float, default=24.0, help="frame rate of a folder of frames")
    p.add_argument("--long-video", choices=("auto", "interpolation", "windows"), default="auto",
                   help="videos longer than a window: key frames + the interpolation network, or key frames + "
                        "aligned windows (auto: the model's better one)")
    p.add_argument("--ply-frame", type=int, help="also write a coloured point cloud of this frame")


def run(args: argparse.Namespace) -> int:
    from backends.common.action_cli import print_line, run_action
    from backends.common.errors import InputError

    from .actions import ESTIMATE_DEPTH
    from .outputs import run_summary
    from .runstore import stopped_request
    from .service import PointCloudRequest, VideoDepthRequest, frame_point_cloud, stopped_run

    if args.resume_run:
        request = stopped_request(args.resume_run)
    elif args.input is None or args.out is None:
        raise InputError("--input and --out are required (or --resume-run ID to continue a run the app started).")
    else:
        if args.resume and stopped_run(args.out) is None:
            raise InputError("There is no stopped run to resume here; start a new run.")
        request = VideoDepthRequest(args.input, args.out, model_id=args.model, max_side=args.max_side,
                                    num_inference_steps=args.steps, window=args.window,
                                    overlap=args.window - args.stride, max_frames=args.max_frames,
                                    colormap=args.colormap, baseline_frames=args.baseline_frames, seed=args.seed,
                                    initial_noise=args.initial_noise, resume=args.resume, fps=args.fps,
                                    long_video=args.long_video)
    result, paths = run_action(ESTIMATE_DEPTH, request, request.out_dir)
    if result.notice:
        print(f"note: {result.notice}", file=sys.stderr)
    line = {"input": Path(request.input_path).name, **run_summary(result),
            **{name: paths[name] for name in ("video", "png_zip", "npz", "run")}}
    if args.ply_frame is not None:
        cloud = frame_point_cloud(PointCloudRequest(request.input_path, result.npz, args.ply_frame, request.out_dir))
        line["ply"] = cloud.ply
    print_line(**line)
    return 0
