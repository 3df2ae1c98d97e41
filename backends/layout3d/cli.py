"""``iclr25-studio layout3d``: a layout JSON in, the stages' images, depths and layouts out.

    iclr25-studio layout3d --layout scene.json --out results/
    iclr25-studio layout3d --layout scene.json --stages moved.json added.json --out results/
    iclr25-studio layout3d --run downloads/stages.json --out again/      # replay a run card

The first layout is generated as Build-A-Scene does (empty scene, then one stage per box); every
``--stages`` layout is the next edit (insert / change / move / remove boxes), earlier objects kept.
``--run`` replays a stages.json (the tab's download or an earlier run) with its model and settings,
stage by stage, to the same pixels. Writes stageNN.png, stageNN_depth16.png, stageNN_layout.json and
stages.json to --out (``outputs.write_scene``, as the tab does); prints one JSON line per stage.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from backends.common import jsontext
from backends.common.errors import InputError

from .models import DEFAULT_MODEL, MODEL_CHOICES


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--layout", type=Path, help="layout JSON: scene_prompt and boxes")
    p.add_argument("--run", type=Path, help="a stages.json to replay (model, settings and every stage's layout)")
    p.add_argument("--stages", type=Path, nargs="*", default=[], help="further layouts, one edit stage each")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--model", default=DEFAULT_MODEL, choices=MODEL_CHOICES)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=20, help="DDIM steps (paper: 20)")
    p.add_argument("--guidance", type=float, default=None, help="CFG scale (default: the model's)")
    p.add_argument("--method", default="bas", choices=("bas", "masactrl", "blend"))


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"Cannot read {what} {path}: {getattr(e, 'strerror', None) or e}.") from None


def _layout(path: Path):
    from .layout import Layout

    return Layout.from_json(_read(path, "layout"))


def run(args: argparse.Namespace) -> int:
    from backends.common.progress import run_to_result

    from .outputs import write_scene
    from .service import SceneRequest, edit_scene, replay_scene, start_scene

    if args.run is not None:
        try:
            card = jsontext.loads(_read(args.run, "run card"))
        except json.JSONDecodeError as e:
            raise InputError(f"The run card {args.run} is not JSON ({e}).") from None
        result = run_to_result(replay_scene(card))
    else:
        if args.layout is None:
            raise InputError("Give --layout (or --run with a stages.json to replay).")
        first = _layout(args.layout)
        later = [_layout(p) for p in args.stages]
        req = SceneRequest(first, model=args.model, seed=args.seed, num_inference_steps=args.steps,
                           guidance_scale=args.guidance, method=args.method)
        result = run_to_result(start_scene(req))
        for layout in later:
            result = run_to_result(edit_scene(result.session, layout))
    if result.vocabulary_warning:
        print(json.dumps({"warning": result.vocabulary_warning}))
    write_scene(result.stages, result.summary, args.out)
    for st in result.stages:
        print(json.dumps(st.summary()))
    return 0
