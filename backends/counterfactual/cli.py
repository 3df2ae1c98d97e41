"""``iclr25-studio counterfactual``: RCSB counterfactuals for one image or a folder, files out.

    iclr25-studio counterfactual --image cube.png --mask auto --target sphere --out results/
    iclr25-studio counterfactual --image images/ --mask masks/ --target cone --out results/
    iclr25-studio counterfactual --run downloads/run.json --out again/     # reproduce a run card

A mask folder is matched to the images by file name; ``--mask auto`` uses the Integrated-Gradients
region. For each image the run's files (original, mask, counterfactuals, differences, region outline,
and the run card run.json) in <out>/<image name>/; one JSON line per image on stdout. ``--run`` is
``iclr25-studio replay``: the request (image, mask, settings, models) from a run.json, the files in
--out directly.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from backends.common.errors import InputError
from backends.common.imageio import to_rgb_array
from backends.common.params import add_request_arguments, values_from_args

from .data import CLASSES
from .requests import CounterfactualRequest, RegionRequest

HELP = "RCSB counterfactuals for an image or a folder (files out)"
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".bmp"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--image", type=Path, help="an image file or a folder of images")
    p.add_argument("--mask", default=None, help="a mask image, a folder of masks (same names), or 'auto' (default)")
    p.add_argument("--target", help=f"target class (embedded classifier: {', '.join(CLASSES)})")
    p.add_argument("--run", type=Path, help="a run.json to reproduce (as `iclr25-studio replay`: its image, mask, settings, models)")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    add_request_arguments(p, CounterfactualRequest, skip=("image", "mask", "target"))
    add_request_arguments(p, RegionRequest, only=("area", "cell"))  # for --mask auto


def run(args: argparse.Namespace) -> int:
    from backends.common.action_cli import run_action

    from .actions import GENERATE
    from .service import class_index, load_models, suggest_region

    if args.run is not None:
        return _reproduce(args)
    if args.image is None or args.target is None:
        raise InputError("Give --image and --target (or --run with a run.json to reproduce).")
    args.mask = args.mask or "auto"
    images = _images(args.image)
    settings = values_from_args(CounterfactualRequest, args)
    models = load_models(args.bridge, args.classifier)
    class_index(args.target, models.classes)  # fail early on an unknown target
    args.out.mkdir(parents=True, exist_ok=True)
    failures = 0
    for path in images:
        try:
            image = to_rgb_array(path)
            if args.mask == "auto":
                mask = suggest_region(RegionRequest(image=image, area=args.area, cell=args.cell, seed=args.seed), models).mask
            else:
                mask_path = Path(args.mask) / path.name if Path(args.mask).is_dir() else Path(args.mask)
                if not mask_path.is_file():
                    raise InputError(f"no mask for {path.name} (looked for {mask_path.name})")
                mask = to_rgb_array(mask_path).max(-1) > 127
            request = CounterfactualRequest(image=image, mask=mask, target=args.target, **settings)
            folder = args.out / path.stem
            result, _ = run_action(GENERATE, request, folder)
        except InputError as e:
            failures += 1
            print(json.dumps({"image": path.name, "error": str(e)}))
            continue
        _print(path.name, result, folder)
    return 1 if failures else 0


def _reproduce(args: argparse.Namespace) -> int:
    """Run a run card's request again (``iclr25-studio replay``): the same image, mask, settings and models
    give the same pixels."""
    from backends.common.action_cli import replay_card

    result, _ = replay_card(args.run, args.out)
    _print(args.run.name, result, args.out)
    return 0


def _print(name: str, result, folder: Path) -> None:
    """One JSON line per image; beyond the embedded models' world the notice also goes to stderr."""
    import sys

    if result.notice:
        print(f"note ({name}): {result.notice}", file=sys.stderr)
    print(json.dumps({"image": name, "prediction": result.original_prediction, "target": result.target,
                      "flip_rate": result.flip_rate, "out": str(folder), "notice": result.notice or None}))


def _images(path: Path) -> list[Path]:
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not found:
            raise InputError(f"no images ({', '.join(sorted(IMAGE_SUFFIXES))}) in {path}")
        return found
    if not path.is_file():
        raise InputError(f"image not found: {path}")
    return [path]
