"""``iclr25-studio videodepth``: depth of a video, an image or a folder of frames, files out.

    iclr25-studio videodepth --input clip.mp4 --out depth/
    iclr25-studio videodepth --input frames/ --fps 12 --out depth/ --ply-frame 10
    iclr25-studio videodepth --input clip.mp4 --out depth/ --resume      # after Ctrl-C or a crash
    iclr25-studio videodepth --resume-run 3f2a9c0b1d4e                   # a run the app started, by its id

One backend call (``service.estimate_depth``, the tab's): writes depth_side_by_side.mp4,
depth_png16.zip (16-bit PNG per frame) and disparity.npz into --out, and with --ply-frame a .ply of
that frame. Progress goes to stderr, one JSON line with the result to stdout. A run stopped by
Ctrl-C keeps its state in --out; ``--resume`` with the same input and settings continues it.
``--resume-run ID`` continues a run the app started (stopped, or cut short by a restart) in its own run
folder, with its saved input and settings (``runstore``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .outputs import COLORMAPS


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
    from backends.common.device import select_device
    from backends.common.errors import InputError
    from backends.common.progress import run_to_result

    from .loading import load_model
    from .runstore import stopped_request
    from .service import PointCloudRequest, VideoDepthRequest, estimate_depth, frame_point_cloud

    if args.resume_run:
        request = stopped_request(args.resume_run)
    elif args.input is None or args.out is None:
        raise InputError("--input and --out are required (or --resume-run ID to continue a run the app started).")
    else:
        request = VideoDepthRequest(args.input, args.out, model_id=args.model, max_side=args.max_side,
                                    num_inference_steps=args.steps, window=args.window,
                                    overlap=args.window - args.stride, max_frames=args.max_frames,
                                    colormap=args.colormap, baseline_frames=args.baseline_frames, seed=args.seed,
                                    initial_noise=args.initial_noise, resume=args.resume, fps=args.fps,
                                    long_video=args.long_video)
    pipe = load_model(request.model_id, str(select_device()))
    result = run_to_result(estimate_depth(request, pipe),
                           on_progress=lambda f, msg: print(f"{f:6.1%} {msg}", file=sys.stderr, flush=True))
    line = {"input": Path(request.input_path).name, "model": result.model_id, "device": result.device,
            "frames": result.frames, "size": list(result.size), "seconds": round(result.seconds, 2), "resumed_at_frame": result.resumed_at,
            "flicker": result.flicker, "baseline_flicker": result.baseline_flicker,
            "video": str(result.video), "png_zip": str(result.png_zip), "npz": str(result.npz), "notes": result.notes,
            "domain": result.domain.to_json() if result.domain is not None else None}
    if result.notice:
        print(f"note: {result.notice}", file=sys.stderr)
    if args.ply_frame is not None:
        cloud = frame_point_cloud(PointCloudRequest(request.input_path, result.npz, args.ply_frame, request.out_dir))
        line["ply"] = str(cloud.ply)
    print(json.dumps(line))
    return 0
