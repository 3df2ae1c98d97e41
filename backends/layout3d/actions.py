"""The 3D Layout capability's action (``backends.common.action``): what the tab's Generate, Next stage and
Rebuild buttons, the API, the CLI and a Ray worker run, and what a run card replays. Torch-free to import.

The three buttons are one action: each reaches a layout stage by stage, from nothing (Generate), from the
scene so far (Next stage: its stages' layouts are in the request) or from a run card's request (Rebuild).
So a card of any stage replays the whole scene, and one Stop stops whichever is running.
"""

from __future__ import annotations

from backends.common.action import Action

from .requests import SceneRequest


def _load(request: SceneRequest):
    from .service import load_pipeline

    return load_pipeline(request.model)


def _work(request: SceneRequest, models, cancel):
    from .service import run_scene

    return run_scene(request, models, cancel)


def _write(result, folder):
    from .outputs import write_scene

    return write_scene(result.stages, folder)


def _summary(result) -> dict:
    from .outputs import result_summary

    return result_summary(result)


SCENE = Action(
    name="layout3d_scene", capability="layout3d", request_type=SceneRequest, load=_load, work=_work,
    write=_write, summary=_summary,
    description="Build-A-Scene: reach a 3D box layout stage by stage (empty scene, then insert / change / "
                "move / remove one box per stage), every earlier object kept.")

ACTIONS = (SCENE,)
