"""``iclr25-studio avatar``: reconstruct, render and export avatars from the command line (files out).

    iclr25-studio avatar example --subject 3 --views 3 --out ex/          # an upload example (PNGs + cameras.json)
    iclr25-studio avatar reconstruct --subject 3 --out av/                # a synthetic subject → av/avatar.safetensors …
    iclr25-studio avatar reconstruct --upload ex/cameras.json --out av/   # your views (images/masks beside the JSON)
    iclr25-studio avatar reconstruct --photos a.jpg b.jpg --out av/       # photos of a person: pose, shape, cameras fitted
    iclr25-studio avatar render --avatar av/avatar.safetensors --preset walking --size 512 --out r/
    iclr25-studio avatar render --avatar av/avatar.safetensors --video turntable --frames 48 --out r/
    iclr25-studio avatar render --avatar av/avatar.safetensors --measure-fps --size 512
    iclr25-studio avatar export --avatar av/avatar.safetensors --preset T-pose --out ex/

Each prints one JSON line with the numbers (times, PSNR against the ground truth for synthetic subjects,
render FPS) and writes the files of ``outputs.py``. Every command but ``--measure-fps`` runs the same action as
the tab (``actions.py``) and also writes its run card, run.json, which ``iclr25-studio replay run.json --out DIR``
runs again. The options come from the actions' requests (``requests.py``: defaults, ranges, help).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from backends.common import jsontext
from backends.common.errors import InputError
from backends.common.params import add_request_arguments, cli_type, fields_of, values_from_args

from .params import PRESETS
from .requests import (
    ExampleRequest,
    ExportRequest,
    PhotosRequest,
    ReconstructRequest,
    RenderRequest,
    VideoRequest,
)

HELP = "LIFe-GoM avatars: reconstruct from views, render novel views/poses/videos, export (files out)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Each subcommand's options come from its action's request (``requests.py``): their defaults, ranges,
    choices and help; the old spellings (``--views``, ``--input-size``, ``--fov``, ``--azimuth``, ``--renderer``)
    stay as aliases."""
    sub = p.add_subparsers(dest="avatar_action", required=True)
    ex = sub.add_parser("example", help="write an upload example (images, masks, cameras.json) of a synthetic subject")
    add_request_arguments(ex, ExampleRequest)
    ex.add_argument("--out", type=Path, required=True)
    rec = sub.add_parser("reconstruct", help="views → an animatable avatar (ply, mesh, avatar.safetensors)")
    src = rec.add_mutually_exclusive_group(required=True)
    subject = fields_of(ReconstructRequest)["subject"]
    src.add_argument("--subject", type=cli_type(subject), help=f"a synthetic subject number (ray-cast on the fly): "
                                                         f"{subject.accepts().lower()}")
    src.add_argument("--upload", type=Path, help="a cameras JSON file; its images and masks lie beside it")
    src.add_argument("--photos", type=Path, nargs="+",
                     help="1-5 photos of one person, whole body in view: MediaPipe finds the body and its mask, "
                          "anny's pose and shape and the cameras are fitted to them")
    add_request_arguments(rec, ReconstructRequest, skip=("subject",))
    add_request_arguments(rec.add_argument_group("the photo fit (with --photos)"), PhotosRequest)
    rec.add_argument("--out", type=Path, required=True)
    ren = sub.add_parser("render", help="render a saved avatar: a novel view, a video, or an FPS measurement")
    _avatar_and_pose(ren)
    add_request_arguments(ren, RenderRequest)
    ren.add_argument("--video", choices=fields_of(VideoRequest)["kind"].param.choices,
                     help="make a video of this kind instead (at --size): "
                          + fields_of(VideoRequest)["kind"].param.help)
    add_request_arguments(ren.add_argument_group("the video (with --video)"), VideoRequest, only=("frames", "fps"))
    ren.add_argument("--measure-fps", action="store_true", dest="measure_fps",
                     help="render the avatar repeatedly at --size and print the FPS (no files)")
    ren.add_argument("--seconds", type=float, default=3.0, help="how long --measure-fps renders")
    ren.add_argument("--out", type=Path)
    exp = sub.add_parser("export", help="a saved avatar's raw files in a pose (3DGS .ply, posed mesh, avatar)")
    _avatar_and_pose(exp)
    exp.add_argument("--out", type=Path, required=True)


def _avatar_and_pose(p: argparse.ArgumentParser) -> None:
    p.add_argument("--avatar", type=Path, required=True, help="an avatar.safetensors written by reconstruct")
    p.add_argument("--preset", help=f"a pose preset ({', '.join(PRESETS)})")
    p.add_argument("--pose", help='pose sliders as JSON, e.g. \'{"arm_raise_r": 150}\'')


def _pose(args):
    from .pose import Pose, preset

    if args.preset and args.pose:
        raise InputError("Give --preset or --pose, not both.")
    if args.preset:
        return preset(args.preset)
    if args.pose:
        try:
            return Pose.from_dict(jsontext.loads(args.pose))
        except json.JSONDecodeError:
            raise InputError("--pose must be a JSON object of pose sliders in degrees.") from None
    return Pose()


def _read_upload(cameras: Path):
    """``--upload``: the cameras file and the images and masks beside it."""
    from .uploads import read_views_beside

    return read_views_beside(cameras)


def _fit_photos(args: argparse.Namespace):
    """``--photos``: the photo fit (the same action as the tab's), each photo with its fit drawn into ``--out``."""
    from dataclasses import replace

    from backends.common.action_cli import drive
    from backends.common.progress import CancelToken

    from .actions import FIT_PHOTOS
    from .uploads import read_photos

    cancel = CancelToken()
    request = replace(read_photos(args.photos), **values_from_args(PhotosRequest, args))
    fitted = drive(FIT_PHOTOS.run(request, cancel), cancel)
    return fitted, FIT_PHOTOS.write(fitted, args.out)


def run(args: argparse.Namespace) -> int:
    import torch

    from backends.common.action_cli import print_line, run_action

    from . import outputs
    from .actions import EXAMPLE, EXPORT, RECONSTRUCT, RENDER, VIDEO

    torch.set_num_threads(max(1, torch.get_num_threads()))
    if args.avatar_action == "example":
        _, paths = run_action(EXAMPLE, ExampleRequest(**values_from_args(ExampleRequest, args)), args.out)
        print_line(files=sorted(p.name for p in paths.values()))
        return 0
    if args.avatar_action == "reconstruct":
        upload = _read_upload(args.upload) if args.upload else None
        fitted, fit_files = None, {}
        if args.photos:
            fitted, fit_files = _fit_photos(args)
            upload = fitted.upload()
        settings = values_from_args(ReconstructRequest, args)
        req = ReconstructRequest(**{**settings, "subject": args.subject, "upload": upload})
        result, paths = run_action(RECONSTRUCT, req, args.out)  # the avatar's files and run.json (replayable)
        if result.notice:
            print(f"note: {result.notice}", file=sys.stderr)
        card = result.card()
        if fitted is not None:
            card["photo_fit"] = fitted.card()
        print_line(**card, files=sorted(p.name for p in [*paths.values(), *fit_files.values()]))
        return 0
    pose = _pose(args)
    if args.avatar_action == "export":
        posed, paths = run_action(EXPORT, ExportRequest(pose=pose, avatar=args.avatar), args.out)
        print_line(**posed.card(), files=sorted(p.name for p in paths.values()))
        return 0
    if args.video:
        if args.out is None:
            raise InputError("--out is needed to write the video.")
        # the render's --azimuth and --size, the video's --frames and --fps
        vreq = VideoRequest(**{**values_from_args(VideoRequest, args), "kind": args.video, "pose": pose,
                               "avatar": args.avatar, "out": args.out})
        v, paths = run_action(VIDEO, vreq, args.out)
        print_line(**v.card(), files=sorted(p.name for p in paths.values()))
        return 0
    if args.measure_fps:
        return _measure_fps(outputs.load_avatar(args.avatar), pose, args)
    if args.out is None:
        raise InputError("--out is needed to write the render.")
    request = RenderRequest(**{**values_from_args(RenderRequest, args), "pose": pose, "avatar": args.avatar})
    r, paths = run_action(RENDER, request, args.out)  # render.png (ground_truth.png) and run.json (replayable)
    print(json.dumps({"render_ms": round(r.render_ms, 1), "renderer": r.renderer, "psnr": r.psnr,
                      "files": sorted(p.name for p in paths.values())}))
    return 0


def _load() -> float:
    import os

    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def _measure_fps(result, pose, args) -> int:
    """Frames per second of the rasterizer alone on the avatar posed once (after a warm-up frame), the CPU
    time per frame, and how long posing takes (skeleton, skinning, Steiner frames), measured apart."""
    import torch

    from . import service
    from .render import render

    camera = service.orbit_camera(args.azimuth_deg, args.height, args.distance, args.size)
    backend = args.backend if args.backend != "auto" else ("gsplat" if service.gsplat_on_cuda() else "fast")
    start = time.perf_counter()
    g = result.gaussians(pose, service.pixel_size_at(camera))
    pose_ms = 1000 * (time.perf_counter() - start)
    view, k = torch.from_numpy(camera.extrinsics).float(), torch.from_numpy(camera.intrinsics).float()
    bg = torch.ones(3)
    render(g, view, k, args.size, args.size, background=bg, backend=backend)  # compile / warm up
    times, start, cpu = [], time.perf_counter(), time.process_time()
    while time.perf_counter() - start < args.seconds or len(times) < 3:
        t = time.perf_counter()
        render(g, view, k, args.size, args.size, background=bg, backend=backend)
        times.append(1000 * (time.perf_counter() - t))
    cpu_ms = 1000 * (time.process_time() - cpu) / len(times)  # CPU time of this process per frame, all threads
    med = sorted(times)[len(times) // 2]
    print(json.dumps({"size": args.size, "gaussians": result.n_gaussians, "frames": len(times), "renderer": backend,
                      "median_ms": round(med, 1), "fps": round(1000 / med, 1), "cpu_ms_per_frame": round(cpu_ms, 1),
                      "pose_ms": round(pose_ms, 1), "load_average": round(_load(), 2)}))
    return 0
