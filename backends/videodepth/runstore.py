"""Video Depth runs kept under an id (``backends.common.runs``), so a stopped or interrupted run resumes
after the server restarted and the browser session that started it is gone.

A run folder holds ``input/<uploaded name>`` (the run's own copy of the video), ``run/`` (the request's
``out_dir``: saved state while it runs, outputs when done) and ``request.json``. The run's card
(``run.json``, ``backends.common.runcard``) is written where the finished run is served from.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict, fields, replace
from pathlib import Path

from backends.common import runs
from backends.common.errors import InputError

from .requests import VideoDepthRequest, legacy_fields

CAPABILITY = "videodepth"
OUT = "run"  # a run folder's out_dir


def start_run(upload: Path, make_request) -> tuple[str, VideoDepthRequest]:
    """Copy ``upload`` into a new run folder and record ``make_request(input_copy, out_dir)``; (run id, request)."""
    run_id, folder = runs.new_run(CAPABILITY)
    local = folder / "input" / Path(upload).name
    local.parent.mkdir()
    shutil.copyfile(upload, local)
    request = make_request(local, folder / OUT)
    data = asdict(request)
    data.update(input_path=str(local.relative_to(folder)), out_dir=OUT, resume=False)
    runs.save_request(folder, data)
    return run_id, request


def run_id_of(request: VideoDepthRequest) -> str | None:
    """The id of the run-store run ``request`` belongs to (None: a run elsewhere, such as the CLI's)."""
    out = Path(request.out_dir).resolve()
    root = (runs.runs_root() / CAPABILITY).resolve()
    return out.parent.name if out.name == OUT and out.parent.parent == root else None


def discard_unstarted(run_id: str) -> None:
    """Delete run ``run_id`` if it never saved any state (its input was refused): nothing to resume."""
    folder, _ = runs.open_run(CAPABILITY, run_id)
    if not (folder / OUT / "resume.json").exists() and not (folder / OUT / "disparity.npz").exists():
        shutil.rmtree(folder, ignore_errors=True)


def stopped_request(run_id: str) -> VideoDepthRequest:
    """The request of the stopped (or interrupted) run ``run_id``, set to resume, or a clear InputError."""
    from .service import stopped_run

    folder, data = runs.open_run(CAPABILITY, run_id)
    data = legacy_fields(data)
    known = {f.name for f in fields(VideoDepthRequest)}
    try:
        request = VideoDepthRequest(**{k: v for k, v in data.items() if k in known})
    except TypeError:
        raise InputError(f"Run {run_id} was saved by another version of the suite; start a new run.") from None
    out = folder / OUT
    saved = stopped_run(out) is not None
    if not saved and (out / "disparity.npz").is_file():
        raise InputError(f"Run {run_id} has finished; there is nothing to resume.")
    # a run cut short before it saved anything starts again from its first frame
    return replace(request, input_path=folder / data["input_path"], out_dir=out, resume=saved)
