"""Run folders that outlive the server: ``<runs_dir>/<capability>/<run id>/``.

A long job that can be resumed keeps its request (``request.json``), its input copy, its saved state
and its outputs in one folder named by an id the person sees (and the API returns). A browser session
dies with the server; the folder does not, so a run that was stopped — or cut short by a crash or a
restart — resumes from disk by its id. Ids are random (unguessable: knowing one is what lets a person
resume that run) and checked against a strict pattern before they touch a path.

:func:`recover` runs when the server starts: it removes what a killed process left (``.part-`` files,
stale lock files, run folders never given their request) and runs untouched for ``MAX_AGE_S``, and
leaves every other run resumable. It runs again on a schedule (``app.components.downloads``).
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import time
from pathlib import Path

from . import files
from .errors import InputError
from .settings import Settings, get_settings

REQUEST = "request.json"
MAX_AGE_S = 24 * 3600  # a run untouched for a day is deleted at the next start
GRACE_S = 600  # a run folder younger than this may still be getting its request.json
_ID = re.compile(r"[0-9a-f]{12}")


def runs_root(settings: Settings | None = None) -> Path:
    settings = settings or get_settings()
    return Path(settings.runs_dir) if settings.runs_dir else Path(settings.models_dir) / "runs"


def new_run(capability: str) -> tuple[str, Path]:
    """A fresh run id and its (new, empty) folder."""
    root = runs_root() / capability
    root.mkdir(parents=True, exist_ok=True)
    while True:
        run_id = secrets.token_hex(6)
        folder = root / run_id
        try:
            folder.mkdir()
            return run_id, folder
        except FileExistsError:
            continue


def save_request(folder: Path, request: dict) -> Path:
    """Record what the run was asked to do (JSON; paths relative to the run folder)."""
    return files.write_text(Path(folder) / REQUEST, json.dumps(request, indent=1))


def open_run(capability: str, run_id: str) -> tuple[Path, dict]:
    """The folder and saved request of run ``run_id``, or a clear :class:`InputError`."""
    run_id = (run_id or "").strip().lower()
    if not _ID.fullmatch(run_id):
        raise InputError(f"{run_id[:40]!r} is not a run id (12 letters and digits, shown when a run starts).")
    folder = runs_root() / capability / run_id
    try:
        return folder, json.loads((folder / REQUEST).read_text())
    except (OSError, json.JSONDecodeError):
        raise InputError(f"There is no run {run_id} here (runs untouched for {MAX_AGE_S // 3600} hours are "
                         "deleted); start a new run.") from None


def recover(root: Path | None = None, max_age_s: float = MAX_AGE_S) -> list[Path]:
    """Clean up after a killed server (see the module's doc); returns what was removed. Folders a live
    job holds (``files.FolderLock``) are never touched."""
    root = Path(root) if root else runs_root()
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    now = time.time()
    for capability in (p for p in root.iterdir() if p.is_dir()):
        for folder in (p for p in capability.iterdir() if p.is_dir()):
            if files.is_locked(folder) or any(files.is_locked(p) for p in folder.iterdir() if p.is_dir()):
                continue
            removed += files.remove_partials(folder)
            age = now - files.newest_mtime(folder)
            if age > max_age_s or (age > GRACE_S and not (folder / REQUEST).is_file()):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    return removed
