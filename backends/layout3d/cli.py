"""``iclr25-studio layout3d``: a layout JSON in, the stages' images, depths and layouts out.

    iclr25-studio layout3d --layout scene.json --out results/
    iclr25-studio layout3d --layout scene.json --stages moved.json added.json --out results/

The first layout is generated as Build-A-Scene does (empty scene, then one stage per box); every
``--stages`` layout is the next edit (insert / change / move / remove boxes), earlier objects kept.
Writes stageNN.png, stageNN_depth16.png, stageNN_layout.json and stages.json to --out; prints one
JSON line per stage.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from backends.common.errors import InputError

from .models import DEFAULT_MODEL, MODEL_CHOICES


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--layout", type=Path, required=True, help="layout JSON: scene_prompt and boxes")
    p.add_argument("--stages", type=Path, nargs="*", default=[], help="further layouts, one edit stage each")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--model", default=DEFAULT_MODEL, choices=MODEL_CHOICES)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=20, help="DDIM steps (paper: 20)")
    p.add_argument("--guidance", type=float, default=None, help="CFG scale (default: the model's)")
    p.add_argument("--method", default="bas", choices=("bas", "masactrl", "blend"))


def _layout(path: Path):
    from .layout import Layout

    try:
        text = path.read_text()
    except OSError as e:
        raise InputError(f"Cannot read layout {path}: {e.strerror}.") from None
    return Layout.from_json(text)


def run(args: argparse.Namespace) -> int:
    from backends.common.progress import run_to_result

    from .outputs import write_scene
    from .service import SceneRequest, edit_scene, start_scene

    first = _layout(args.layout)
    later = [_layout(p) for p in args.stages]
    req = SceneRequest(first, model=args.model, seed=args.seed, num_inference_steps=args.steps,
                       guidance_scale=args.guidance, method=args.method)
    result = run_to_result(start_scene(req))
    session = result.session
    if result.vocabulary_warning:
        print(json.dumps({"warning": result.vocabulary_warning}))
    for layout in later:
        result = run_to_result(edit_scene(session, layout))
    write_scene(result.stages, result.summary, args.out)
    for st in result.stages:
        print(json.dumps(st.summary()))
    return 0
