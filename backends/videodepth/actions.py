"""The Video Depth capability's actions (``backends.common.action``): what the tab's Estimate / Resume buttons,
the API, the CLI, the benches and a Ray worker run, and what a run card replays. Torch-free to import."""

from __future__ import annotations

from dataclasses import replace

from backends.common.action import Action
from backends.common.errors import InputError

from .requests import VideoDepthRequest, legacy_fields


class _DepthAction(Action):
    """An action whose run cards of earlier versions (the windows' overlap instead of the key-frame stride) still
    replay."""

    def request_from_card(self, card: dict, folder, out=None):
        if isinstance(card.get("request"), dict):
            card = {**card, "request": legacy_fields(card["request"])}
        return super().request_from_card(card, folder, out)


def _load(request: VideoDepthRequest):
    from .loading import model_for

    return model_for(request.model_id)


def _estimate(request: VideoDepthRequest, pipe, cancel):
    """The run streams its outputs into ``out_dir`` as frames finish (a stopped run resumes from them). A run
    of the app's run store whose input is refused leaves no run behind (there is nothing to resume)."""
    from . import runstore
    from .service import estimate_depth, stopped_run

    if request.resume and stopped_run(request.out_dir) is None:
        request = replace(request, resume=False)  # nothing stopped here (a replay's --out): from the first frame
    try:
        yield from estimate_depth(request, pipe, cancel)
    except InputError:
        run_id = runstore.run_id_of(request)
        if run_id is not None:
            runstore.discard_unstarted(run_id)
        raise


def _write(result, folder):
    from .outputs import write_files

    return write_files(result, folder)


def _summary(result) -> dict:
    from .outputs import run_summary

    return run_summary(result)


ESTIMATE_DEPTH = _DepthAction(
    name="videodepth_estimate_depth", capability="videodepth", request_type=VideoDepthRequest,
    load=_load, work=_estimate, write=_write, summary=_summary, output_fields=("out_dir",),
    description="Depth Any Video: consistent depth of every frame of a video (or an image), streamed to files.")

ACTIONS = (ESTIMATE_DEPTH,)
