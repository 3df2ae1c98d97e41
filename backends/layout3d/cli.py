"""``iclr25-studio layout3d``: a layout JSON in, the stages' images, depths and layouts out.

    iclr25-studio layout3d --layout scene.json --out results/
    iclr25-studio layout3d --layout scene.json --stages moved.json added.json --out results/
    iclr25-studio layout3d --run downloads/run.json --out again/      # replay a run card

The first layout is generated as Build-A-Scene does (empty scene, then one stage per box); every
``--stages`` layout is the next edit (insert / change / move / remove boxes), earlier objects kept.
``--run`` is ``iclr25-studio replay``: a scene's run.json (the tab's download or an earlier run; an
older stages.json too) with its model, settings and layouts, stage by stage, to the same pixels.
Writes stageNN.png, stageNN_depth16.png, stageNN_layout.json and the run card run.json to --out
(the scene action's ``write_run``, as the tab does); prints one JSON line per stage.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from backends.common import jsontext
from backends.common.errors import InputError
from backends.common.params import add_request_arguments, values_from_args

from .requests import SceneRequest

HELP = "Build-A-Scene: a 3D box layout (and later edits) to staged images (files out)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--layout", type=Path, help="layout JSON: scene_prompt and boxes")
    p.add_argument("--run", type=Path, help="a run.json to replay (as `iclr25-studio replay`: model, settings, layouts)")
    p.add_argument("--stages", type=Path, nargs="*", default=[], help="further layouts, one edit stage each")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    # the scene's settings, as the request declares them (--steps / --guidance / --blend: the older spellings)
    add_request_arguments(p, SceneRequest, skip=("layout", "history"))


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"Cannot read {what} {path}: {getattr(e, 'strerror', None) or e}.") from None


def _layout(path: Path):
    from .layout import Layout

    return Layout.from_json(_read(path, "layout"))


def run(args: argparse.Namespace) -> int:
    from backends.common.action_cli import run_action

    from .actions import SCENE

    if args.run is not None:
        result = _replay(args.run, args.out)
    else:
        if args.layout is None:
            raise InputError("Give --layout (or --run with a run.json to replay).")
        layouts = [_layout(args.layout), *(_layout(p) for p in args.stages)]
        request = SceneRequest(layouts[-1], history=layouts[:-1], **values_from_args(SceneRequest, args))
        result, _ = run_action(SCENE, request, args.out)
    if result.vocabulary_warning:
        print(json.dumps({"warning": result.vocabulary_warning}))
    for st in result.stages:
        print(json.dumps(st.summary()))
    return 0


def _replay(card: Path, out: Path):
    """A run.json through ``replay_card``; an older stages.json as the request it describes."""
    from backends.common.action_cli import replay_card, run_action

    from .actions import SCENE
    from .uploads import request_from_stages_json

    try:
        data = jsontext.loads(_read(card, "run card"))
    except json.JSONDecodeError as e:
        raise InputError(f"The run card {card} is not JSON ({e}).") from None
    if isinstance(data, dict) and "stages" in data and "format" not in data:
        return run_action(SCENE, request_from_stages_json(data), out)[0]
    if isinstance(data, dict) and data.get("action") not in (None, SCENE.name):
        raise InputError(f"{card.name} is a run card of '{data['action']}'; replay it with `iclr25-studio replay`.")
    return replay_card(card, out)[0]
