"""Folders for files a handler returns for download, and the schedule that deletes old ones.

Gradio copies returned files into its own cache (cleaned by ``delete_cache``); the tabs' own folders
live under one root, ``<temp>/iclr25-studio/outputs``, and are bounded the same way: a cleanup pass
deletes folders untouched for ``MAX_AGE_S`` — also those of an earlier server process — at start-up and
then every ``EVERY_S`` seconds (folders a running job holds are left alone), and a process keeps only the
newest ``KEEP`` folders it made. The same pass cleans the run folders kept across restarts
(``backends.common.runs.recover``).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from collections import deque
from pathlib import Path

from backends.common import files, runs

MAX_AGE_S = 3600  # as Gradio's delete_cache for the files it serves
KEEP = 32
EVERY_S = 600

log = logging.getLogger(__name__)
_root = Path(tempfile.gettempdir()) / "iclr25-studio" / "outputs"
_sweeper: Cleanup | None = None
_lock = threading.Lock()
_dirs: deque[Path] = deque()


def output_root() -> Path:
    return _root


def new_output_dir(prefix: str) -> Path:
    root = output_root()
    root.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir=root))
    with _lock:
        _dirs.append(path)
        while len(_dirs) > KEEP:
            shutil.rmtree(_dirs.popleft(), ignore_errors=True)
    return path


def servable(paths, prefix: str) -> list[str]:
    """The files of ``paths`` where Gradio may serve them: linked (copied across file systems) into a new
    output folder. Run folders live beside the models, outside Gradio's allowed folders, and keep their
    own copies for resuming; what the page offers is this copy, bounded like every output folder."""
    import os

    folder = new_output_dir(prefix)
    out = []
    for path in map(Path, paths):
        target = folder / path.name
        try:
            os.link(path, target)
        except OSError:
            shutil.copyfile(path, target)
        out.append(str(target))
    return out


def clean_up(max_age_s: float = MAX_AGE_S, root: Path | None = None) -> list[Path]:
    """One cleanup pass: old output folders, and what killed runs left in the run folders."""
    removed = files.sweep(root or output_root(), max_age_s)
    try:
        removed += runs.recover()
    except OSError as e:  # an unreadable runs folder must not stop the server
        log.warning("cleaning the runs folder failed: %s", e)
    return removed


class Cleanup:
    """:func:`clean_up` now, then every ``every_s`` seconds on a daemon thread, until :meth:`stop`."""

    def __init__(self, every_s: float = EVERY_S, max_age_s: float = MAX_AGE_S, root: Path | None = None):
        self.every_s, self.max_age_s, self.root = every_s, max_age_s, root
        self._stop = threading.Event()
        self.passes = 0
        self.thread = threading.Thread(target=self._loop, name="output-cleanup", daemon=True)

    def start(self) -> Cleanup:
        self._pass()
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(timeout=10)

    def _pass(self) -> None:
        try:
            clean_up(self.max_age_s, self.root)
        except Exception:  # noqa: BLE001 — a failed pass is retried at the next one
            log.exception("output cleanup failed")
        self.passes += 1

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self._pass()


def start_cleanup() -> Cleanup:
    """The server's cleanup schedule (one per process)."""
    global _sweeper
    with _lock:
        if _sweeper is None:
            _sweeper = Cleanup().start()
        return _sweeper
