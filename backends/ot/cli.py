"""``iclr25-studio ot``: optimal transport from files, batch-friendly, files out.

    iclr25-studio ot colour --source photo.jpg --reference painting.png --out out/
    iclr25-studio ot densities --source a.npy --target b.png --side 32 --out out/     # .npy: non-negative 2-D
    iclr25-studio ot densities --source folder/ --target b.png --out out/             # one run per file
    iclr25-studio ot clouds --source a.csv --target b.npy --out out/                  # point clouds (n × 2 or 3)
    iclr25-studio ot clouds --kind-a ring --kind-b square --n 500 --out out/         # generated clouds
    iclr25-studio ot convergence --side 24 --eps 0.0005 --out out/
    iclr25-studio ot --run downloads/run.json --out again/                           # replay a run card

One JSON line per run on stdout (cost, γ reached, marginal error, out folder); progress on stderr.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from backends.common.errors import InputError
from backends.common.params import add_request_arguments, values_from_args

from .requests import ColourTransferRequest, ConvergenceRequest, DensityRequest, PointCloudRequest

HELP = ("optimal transport (MDOT-TNT): colour transfer, densities from .npy/.png, point clouds from .npy/.csv, solver "
        "comparison (files out)")
CLOUD_FORMAT = ("a point cloud: .npy (an n × d array) or .csv (comma-separated, one point a line, an optional "
                "header), d = 2 or 3 columns x, y[, z]; with --weights-column one more, last column: each point's "
                "mass (else uniform)")
SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".bmp", ".npy"}
CLOUD_SUFFIXES = {".npy", ".csv"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", type=Path, help="a run.json to reproduce (as `iclr25-studio replay`)")
    p.add_argument("--out", type=Path, help="output folder")
    sub = p.add_subparsers(dest="ot_action")
    col = sub.add_parser("colour", help="re-colour --source with the colours of --reference")
    col.add_argument("--source", type=Path, required=True, help="a photo, or a folder of photos")
    col.add_argument("--reference", type=Path, required=True, help="the photo whose colours are taken")
    col.add_argument("--out", type=Path, required=True, help="output folder")
    add_request_arguments(col, ColourTransferRequest)
    den = sub.add_parser("densities", help="the plan between two densities and its displacement interpolation")
    den.add_argument("--source", type=Path, help="a grey image or .npy (non-negative 2-D), or a folder of them; "
                                                 "none: generated --class-a")
    den.add_argument("--target", type=Path, help="a grey image or .npy; none: generated --class-b")
    den.add_argument("--out", type=Path, required=True, help="output folder")
    add_request_arguments(den, DensityRequest)
    clo = sub.add_parser("clouds", help="the plan between two point clouds (.npy / .csv) and exact EMD beside it",
                         description="MDOT-TNT between two point clouds, exact EMD beside it. Inputs: " + CLOUD_FORMAT
                         + ". A folder as --source: one run (sub-folder) per file.")
    clo.add_argument("--source", type=Path, help=CLOUD_FORMAT + "; or a folder of them; none: generated --kind-a")
    clo.add_argument("--target", type=Path, help="the second point cloud, same d; none: generated --kind-b")
    clo.add_argument("--out", type=Path, required=True, help="output folder")
    add_request_arguments(clo, PointCloudRequest)
    con = sub.add_parser("convergence", help="every solver on one generated problem, traced against time")
    con.add_argument("--out", type=Path, required=True, help="output folder")
    add_request_arguments(con, ConvergenceRequest)


def load_input(path: Path):
    """A .npy array (as saved: a 2-D density) or an image file (read by the solver's service)."""
    if not path.is_file():
        raise InputError(f"file not found: {path}")
    if path.suffix.lower() == ".npy":
        arr = np.load(path, allow_pickle=False)
        if arr.ndim != 2:
            raise InputError(f"{path.name}: a density .npy must be 2-D (got shape {arr.shape})")
        return arr.astype(np.float64)
    from backends.common.imageio import to_rgb_array

    return to_rgb_array(path)


def _files(path: Path, suffixes=SUFFIXES) -> list[Path]:
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.suffix.lower() in suffixes)
        if not found:
            raise InputError(f"no inputs ({', '.join(sorted(suffixes))}) in {path}")
        return found
    return [path]


def run(args: argparse.Namespace) -> int:
    from backends.common.action_cli import print_line, replay_card, run_action

    from .actions import CLOUDS, COLOUR, CONVERGENCE, DENSITIES

    if args.run is not None:
        if args.out is None:
            raise InputError("Give --out for the replayed run's files.")
        result, _ = replay_card(args.run, args.out)
        print_line(run=args.run.name, cost=getattr(result, "cost", None), out=args.out)
        return 0
    if args.ot_action is None:
        raise InputError("Choose colour, densities, clouds or convergence (or --run with a run.json).")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.ot_action == "convergence":
        result, _ = run_action(CONVERGENCE, ConvergenceRequest(**values_from_args(ConvergenceRequest, args)), args.out)
        print_line(exact_cost=result.exact_cost, methods={r["method"]: r["relative_gap"] for r in result.runs},
                   out=args.out)
        return 0
    action, request_type = {"colour": (COLOUR, ColourTransferRequest), "densities": (DENSITIES, DensityRequest),
                            "clouds": (CLOUDS, PointCloudRequest)}[args.ot_action]
    settings = values_from_args(request_type, args)
    suffixes = CLOUD_SUFFIXES if action is CLOUDS else SUFFIXES
    sources = _files(args.source, suffixes) if args.source is not None else [None]
    failures = 0
    for path in sources:
        folder = args.out / path.stem if (path is not None and len(sources) > 1) else args.out
        try:
            given = load_input(path) if (path is not None and action is not CLOUDS) else None
            if action is CLOUDS:
                from .clouds import read_points

                request = PointCloudRequest(source=None if path is None else read_points(path),
                                            target=None if args.target is None else read_points(args.target),
                                            **settings)
            elif action is COLOUR:
                request = ColourTransferRequest(source=given, reference=load_input(args.reference), **settings)
            else:
                target = load_input(args.target) if args.target is not None else None
                request = DensityRequest(source=given, target=target, **settings)
            result, _ = run_action(action, request, folder)
        except InputError as e:
            failures += 1
            print(json.dumps({"input": None if path is None else path.name, "error": str(e)}))
            continue
        extra = {"exact_cost": result.exact_cost, "relative_gap": result.info["relative_gap"]} \
            if action is CLOUDS else {}
        print_line(input=None if path is None else path.name, cost=result.cost, **extra, gamma=result.info["gamma"],
                   marginal_error=result.info["marginal_error"], converged=result.info["converged"], out=folder)
    return 1 if failures else 0
