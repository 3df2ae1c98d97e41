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

from backends.common.params import add_request_arguments

from .requests import VideoDepthRequest

HELP = "Depth Any Video: depth of a video, image or folder of frames (mp4, 16-bit PNGs, npz)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", type=Path, help="a video, an image, or a folder of frame images (required)")
    p.add_argument("--out", type=Path, help="output folder (required)")
    p.add_argument("--resume-run", metavar="ID", help="continue the app's run ID in its run folder, with its own input "
                                                       "and settings (instead of --input/--out)")
    # the settings (and --resume), their ranges, defaults and help from the request: the tab's, the API's
    add_request_arguments(p, VideoDepthRequest)
    p.add_argument("--ply-frame", type=int, help="also write a coloured point cloud of this frame")


def run(args: argparse.Namespace) -> int:
    from backends.common.action_cli import print_line, run_action
    from backends.common.errors import InputError
    from backends.common.params import values_from_args

    from .actions import ESTIMATE_DEPTH
    from .outputs import run_summary
    from .requests import PointCloudRequest, checked
    from .runstore import stopped_request
    from .service import frame_point_cloud, stopped_run

    if args.resume_run:
        request = stopped_request(args.resume_run)
    elif args.input is None or args.out is None:
        raise InputError("--input and --out are required (or --resume-run ID to continue a run the app started).")
    else:
        if args.resume and stopped_run(args.out) is None:
            raise InputError("There is no stopped run to resume here; start a new run.")
        request = VideoDepthRequest(args.input, args.out, **values_from_args(VideoDepthRequest, args))
    result, paths = run_action(ESTIMATE_DEPTH, request, request.out_dir)
    if result.notice:
        print(f"note: {result.notice}", file=sys.stderr)
    line = {"input": Path(request.input_path).name, **run_summary(result),
            **{name: paths[name] for name in ("video", "png_zip", "npz", "run")}}
    if args.ply_frame is not None:
        cloud = frame_point_cloud(checked(PointCloudRequest(request.input_path, result.npz, request.out_dir,
                                                            frame=args.ply_frame)))
        line["ply"] = cloud.ply
    print_line(**line)
    return 0
