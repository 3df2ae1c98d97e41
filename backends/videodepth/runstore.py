"""Video Depth runs kept under an id (``backends.common.runs``), so a stopped or interrupted run resumes
after the server restarted and the browser session that started it is gone.

A run folder holds ``input/<uploaded name>`` (the run's own copy of the video), ``run/`` (the request's
``out_dir``: saved state while it runs, outputs when done) and ``request.json``.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict, fields, replace
from pathlib import Path

from backends.common import runs
from backends.common.errors import InputError

from .service import VideoDepthRequest, stopped_run

CAPABILITY = "videodepth"


def start_run(upload: Path, make_request) -> tuple[str, VideoDepthRequest]:
    """Copy ``upload`` into a new run folder and record ``make_request(input_copy, out_dir)``; (run id, request)."""
    run_id, folder = runs.new_run(CAPABILITY)
    local = folder / "input" / Path(upload).name
    local.parent.mkdir()
    shutil.copyfile(upload, local)
    request = make_request(local, folder / "run")
    data = asdict(request)
    data.update(input_path=str(local.relative_to(folder)), out_dir="run", resume=False)
    runs.save_request(folder, data)
    return run_id, request


def discard_unstarted(run_id: str) -> None:
    """Delete run ``run_id`` if it never saved any state (its input was refused): nothing to resume."""
    folder, _ = runs.open_run(CAPABILITY, run_id)
    if not (folder / "run" / "resume.json").exists() and not (folder / "run" / "disparity.npz").exists():
        shutil.rmtree(folder, ignore_errors=True)


def stopped_request(run_id: str) -> VideoDepthRequest:
    """The request of the stopped (or interrupted) run ``run_id``, set to resume, or a clear InputError."""
    folder, data = runs.open_run(CAPABILITY, run_id)
    known = {f.name for f in fields(VideoDepthRequest)}
    try:
        request = VideoDepthRequest(**{k: v for k, v in data.items() if k in known})
    except TypeError:
        raise InputError(f"Run {run_id} was saved by another version of the suite; start a new run.") from None
    out = folder / "run"
    saved = stopped_run(out) is not None
    if not saved and (out / "disparity.npz").is_file():
        raise InputError(f"Run {run_id} has finished; there is nothing to resume.")
    # a run cut short before it saved anything starts again from its first frame
    return replace(request, input_path=folder / data["input_path"], out_dir=out, resume=saved)
