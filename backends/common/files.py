"""Writing output files safely: a file appears whole or not at all, and a full disk is a clear message.

Every writer of outputs (PNGs, depth maps, videos, run cards, zips, checkpoints of a run) writes to a
temporary name in the same folder (``.<stem>.part-<random><suffix>``: same folder, so the final
``os.replace`` is atomic; same suffix, so writers that look at it — ffmpeg, numpy — still do the right
thing) and renames it into place only when it is complete. A failed write leaves no partial file and
keeps the previous file of that name as it was; a process killed mid-write leaves only ``.part-``
files, which :func:`remove_partials` deletes on the next start. ``ENOSPC`` / ``EDQUOT`` become
:class:`DiskFullError`, which names the file and the free space.

:class:`FolderLock` marks a folder as being written by a live job (``filelock``'s OS lock, released when
the process dies however it dies), so start-up cleanup and age-based sweeps never touch a running job's
folder; :func:`sweep` deletes old output folders on a schedule.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from .errors import DiskFullError

PART = ".part-"
LOCK_NAME = ".lock"
_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def free_bytes(folder: str | Path) -> int:
    """Free space (bytes) on the disk that holds ``folder`` (or its nearest existing parent); 0 if unknown."""
    folder = Path(folder)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return 0


def free_mb(folder: str | Path) -> float:
    """Free space (MB) on the disk that holds ``folder``."""
    return free_bytes(folder) / 2**20


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in _FULL


@contextlib.contextmanager
def disk_errors(path: str | Path) -> Iterator[None]:
    """Turn "no space left" / "quota exceeded" while writing ``path`` into :class:`DiskFullError`."""
    try:
        yield
    except OSError as e:
        if is_disk_full(e):
            raise DiskFullError(Path(path).name, free_mb(Path(path).parent)) from e
        raise


def part_path(path: str | Path) -> Path:
    """A temporary sibling of ``path`` with the same suffix: ``.<stem>.part-<random><suffix>``."""
    path = Path(path)
    return path.with_name(f".{path.stem}{PART}{secrets.token_hex(4)}{path.suffix}")


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path to write ``path``'s content to; on success it replaces ``path`` in one step.

    On any error the temporary file is removed and ``path`` keeps what it had; a full disk is raised
    as :class:`DiskFullError`.
    """
    path = Path(path)
    tmp = part_path(path)
    try:
        with disk_errors(path):
            yield tmp
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def write_bytes(path: str | Path, data: bytes) -> Path:
    """``path.write_bytes(data)``, atomically (see :func:`atomic_path`)."""
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(data)
    return path


def write_text(path: str | Path, text: str) -> Path:
    """``path.write_text(text)`` in UTF-8, atomically (see :func:`atomic_path`)."""
    return write_bytes(path, text.encode("utf-8"))


def reserve(path: str | Path, nbytes: int) -> None:
    """Allocate ``nbytes`` for an existing file now, so a disk-backed array fails here with a clear
    message instead of crashing the process (SIGBUS) when a page of it cannot be written later."""
    path = Path(path)
    if not hasattr(os, "posix_fallocate") or nbytes <= 0:
        return
    with disk_errors(path), open(path, "r+b") as f:
        try:
            os.posix_fallocate(f.fileno(), 0, nbytes)
        except OSError as e:
            if e.errno in (errno.EOPNOTSUPP, errno.EINVAL, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)):
                return  # the filesystem cannot reserve space ahead; write as before
            raise


# --- folders in use, and cleaning up after a crash --------------------------------------------------------

class FolderLock:
    """A job's exclusive hold on ``folder`` for its life: ``filelock.FileLock`` on ``folder/.lock``.

    ``acquire`` never waits: it returns False when another job (in this process or another) holds the folder.
    The OS drops the lock when its process dies however it dies, so a lock file left by a killed server is
    stale and :func:`is_locked` says so. The lock file stays after ``release`` (deleting it there would let a
    job that opened it just before hold the deleted file while the next one locks a new one: two holders).
    Not thread-bound: a generator may take it on one thread and give it back on another.
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._lock = FileLock(self.folder / LOCK_NAME, thread_local=False)

    def acquire(self) -> bool:
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            return False
        return True

    def release(self) -> None:
        if self._lock.is_locked:
            self._lock.release(force=True)

    @property
    def held(self) -> bool:
        return self._lock.is_locked

    def __enter__(self) -> FolderLock:
        if not self.acquire():
            from .errors import InputError

            raise InputError("Another job is writing to this run's folder right now; wait for it to finish.")
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def is_locked(folder: str | Path) -> bool:
    """Whether a live job holds ``folder``'s lock (a lock file of a dead process does not count)."""
    folder = Path(folder)
    if not (folder / LOCK_NAME).exists():
        return False
    probe = FolderLock(folder)
    if probe.acquire():
        probe.release()
        return False
    return True


def remove_partials(folder: str | Path) -> list[Path]:
    """Delete ``.part-`` files (writes cut short by a crash) and stale lock files under ``folder``, except in
    folders a live job holds; returns what was removed. A stale lock file is deleted while this holds it, so a
    job that opens it meanwhile finds it gone and takes a new one (``filelock`` checks)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    removed: list[Path] = []
    held: list[Path] = []
    for lock_file in folder.rglob(LOCK_NAME):
        probe = FolderLock(lock_file.parent)
        if not probe.acquire():
            held.append(lock_file.parent)
            continue
        try:
            with contextlib.suppress(FileNotFoundError):
                lock_file.unlink()
                removed.append(lock_file)
        finally:
            probe.release()
    for p in folder.rglob("*"):
        if p.is_file() and PART in p.name and not any(p.is_relative_to(h) for h in held):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
                removed.append(p)
    return removed


def newest_mtime(folder: Path) -> float:
    """The latest modification time of ``folder`` or anything in it."""
    latest = folder.stat().st_mtime
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            with contextlib.suppress(FileNotFoundError):
                latest = max(latest, os.stat(os.path.join(root, name)).st_mtime)
    return latest


def sweep(root: str | Path, max_age_s: float, keep: int | None = None, now: float | None = None) -> list[Path]:
    """Delete the entries of ``root`` untouched for ``max_age_s`` seconds (and beyond the newest ``keep``),
    skipping folders a live job holds; returns what was deleted."""
    root = Path(root)
    if not root.is_dir():
        return []
    now = time.time() if now is None else now
    aged = []
    for entry in root.iterdir():
        try:
            aged.append((newest_mtime(entry) if entry.is_dir() else entry.stat().st_mtime, entry))
        except FileNotFoundError:
            continue
    aged.sort(reverse=True)
    deleted = []
    for rank, (mtime, entry) in enumerate(aged):
        too_many = keep is not None and rank >= keep
        if (now - mtime < max_age_s and not too_many) or (entry.is_dir() and is_locked(entry)):
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
        deleted.append(entry)
    return deleted
