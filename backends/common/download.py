"""Getting a real checkpoint from the Hugging Face Hub: every file its spec lists, with progress, Stop and resume.

:func:`download` is long work (a generator of :class:`ProgressEvent`, then a :class:`DownloadResult`) that
the CLI (``models download``), the System tab's *Download* action (``backends.common.system_actions``) and the
tests all drive; nothing else downloads (``registry.resolve`` never does). It goes through huggingface_hub's
public API (``HfApi`` for the metadata, ``hf_hub_download`` per file) into ``<models_dir>/<repo id>`` (the
registry's first place to look), pinned to one commit so the files belong together:

* first the licence and the sizes (``model_info``, ``get_paths_info``): the licence is the first event, and
  a disk too small for what is still to fetch stops here, before a byte is written;
* bytes, rate and time left are reported per chunk (``hf_hub_download``'s ``tqdm_class``); a
  :class:`CancelToken` stops it between chunks. Each file is fetched into the staging folder ``.partial/``
  (the client resumes a dropped connection itself with a Range request) and moved into place only when
  whole and matching its published sha256, so an interrupted run leaves no file that counts as present.
  A file that arrived whole is kept and never fetched again; the file a Stop (or a killed process) cut
  short starts over on the next run (huggingface_hub discards its own partial file then);
* a manifest (:data:`MANIFEST`) is written last, with the sha256 the hub published for each LFS file, so
  ``models check`` can verify the weights later (:func:`verify_download`).

Everything that can go wrong on the way (gated repo, wrong token, no such repo or file, no network, a
full disk) is one :class:`DownloadError` whose message says what to do — never "missing", never a traceback.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .errors import Cancelled, DownloadError
from .files import FolderLock, free_bytes, is_disk_full, write_text
from .progress import CancelToken, ProgressEvent, Reporter, stream_reports
from .registry import ModelSpec, sha256_file
from .settings import Settings, get_settings

MANIFEST = ".iclr25-download.json"
_REPORT_EVERY_S = 0.25


@dataclass(frozen=True)
class RemoteFile:
    path: str
    size: int
    sha256: str | None  # published for LFS files (the weights); None for small git files


@dataclass
class DownloadProgress:
    """What a progress line shows: bytes, rate and time left (the ``preview`` of each event)."""

    model_id: str
    file: str
    done_bytes: int
    total_bytes: int
    rate_bps: float
    eta_s: float | None
    licence: str = ""  # the model's licence line, for a page that shows it above the progress

    def line(self) -> str:
        eta = "" if self.eta_s is None else f", {_duration(self.eta_s)} left"
        return (f"{self.model_id}: {self.file} — {_size(self.done_bytes)} of {_size(self.total_bytes)}"
                f" at {_size(self.rate_bps)}/s{eta}")


@dataclass
class DownloadResult:
    model_id: str
    folder: Path
    files: list[str]
    bytes_downloaded: int
    seconds: float
    license: str
    sha256: dict[str, str] = field(default_factory=dict)
    variant: str | None = None
    licence_line: str = ""  # what the first event said (the licence, the Hub's name for it, where to read it)
    also: list[DownloadResult] = field(default_factory=list)  # models fetched after it in the same run


def target_folder(spec: ModelSpec, settings: Settings | None = None) -> Path:
    """Where :func:`download` puts ``spec``: the models folder's ``<repo id>`` (the registry looks there first)."""
    return (settings or get_settings()).models_dir / spec.location


def license_line(spec: ModelSpec, hub_license: str | None = None) -> str:
    shown = spec.license if not hub_license or hub_license in spec.license.lower() else f"{spec.license} ({hub_license})"
    return f"Licence of {spec.id}: {shown}. Read it on https://huggingface.co/{spec.location} before use."


def download(spec: ModelSpec, cancel: CancelToken | None = None, settings: Settings | None = None,
             token: str | None = None, variant: str | None = None) -> Iterator[ProgressEvent | DownloadResult]:
    """Fetch every file of ``spec`` (a ``source="hf"`` model); events, then a :class:`DownloadResult`.

    ``variant="fp16"`` fetches the fp16 weights the repo publishes (``spec.fp16_files``) instead.
    """
    settings = settings or get_settings()
    if spec.source != "hf":
        raise DownloadError(spec.id, "not-hf", f"it is not on the Hugging Face Hub; {spec.instructions(settings)}")
    if variant not in (None, "fp16") or (variant == "fp16" and not spec.fp16_files):
        raise DownloadError(spec.id, "no-variant", f"its repo publishes no {variant} weights; download it without "
                                                   "the fp16 option.")
    files = spec.fp16_files if variant == "fp16" else spec.files
    return stream_reports(lambda report: _run(spec, files, variant, settings, token, report), cancel)


def _run(spec: ModelSpec, files: tuple[str, ...], variant: str | None, settings: Settings, token: str | None,
         report: Reporter) -> DownloadResult:
    from huggingface_hub import HfApi, constants

    if constants.is_offline_mode():
        raise DownloadError(spec.id, "offline", "HF_HUB_OFFLINE=1 is set in this environment, so the Hugging Face "
                                                "client refuses to download; run again with HF_HUB_OFFLINE=0.")
    endpoint = os.environ.get("HF_ENDPOINT", constants.ENDPOINT).rstrip("/")
    folder = target_folder(spec, settings)
    started = time.monotonic()
    with _hub_errors(spec, folder):
        api = HfApi(endpoint=endpoint, token=token)
        info = api.model_info(spec.location)
        hub_license = getattr(info.card_data, "license", None)
        licence = license_line(spec, hub_license)
        report(ProgressEvent(0.0, licence))
        remote = _remote_files(api, spec, files, info.sha)
        todo = [f for f in remote if not _present(folder, f)]
        _check_space(spec, folder, todo)
        tracker = _Tracker(spec.id, sum(f.size for f in remote), sum(f.size for f in remote if f not in todo), report)
        bar = _bar_class(tracker)
        lock = FolderLock(staging_folder(folder))  # one download per model folder, across processes
        if todo and not lock.acquire():
            raise DownloadError(spec.id, "busy", "it is being downloaded right now (another window, tab or "
                                                 "command); wait for that download to finish.")
        try:
            for f in todo:
                report.cancel.raise_if_cancelled()
                tracker.file = f.path
                _fetch(spec, f, folder, endpoint, info.sha, token, bar, tracker)
                tracker.finish_file(f.size)
        finally:
            lock.release()
    manifest = {"model": spec.id, "repo": spec.location, "revision": info.sha, "license": spec.license,
                "variant": variant,
                "files": {f.path: {"size": f.size, "sha256": f.sha256} for f in remote}}
    write_text(folder / MANIFEST, json.dumps(manifest, indent=1))
    tracker.emit(force=True)
    return DownloadResult(spec.id, folder, [f.path for f in remote], tracker.fetched, time.monotonic() - started,
                          spec.license, {f.path: f.sha256 for f in remote if f.sha256}, variant, licence)


def _fetch(spec: ModelSpec, f: RemoteFile, folder: Path, endpoint: str, revision: str, token: str | None, bar,
           tracker: _Tracker) -> None:
    """One file through ``hf_hub_download`` into the staging folder (its ``tqdm_class`` reports each chunk and
    stops the download on Stop), checked against the published sha256, then moved into place in one step."""
    from huggingface_hub import hf_hub_download

    fetched = Path(hf_hub_download(spec.location, f.path, revision=revision, endpoint=endpoint, token=token,
                                   local_dir=staging_folder(folder), tqdm_class=bar))
    if f.sha256:
        tracker.emit(force=True, note=f"checking the sha256 of {f.path}")
        digest = sha256_file(fetched)
        if digest != f.sha256:
            fetched.unlink()
            raise DownloadError(spec.id, "failed", f"{f.path} arrived with sha256 {digest[:12]}…, the hub published "
                                                   f"{f.sha256[:12]}…; it was deleted: run again.")
    target = folder / f.path
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(fetched, target)


def staging_folder(folder: Path) -> Path:
    """Where a model's files arrive until each is whole and checked (never a path the registry counts as
    present); it also holds the download's lock."""
    return Path(folder) / ".partial"


def _remote_files(api, spec: ModelSpec, files: tuple[str, ...], revision: str) -> list[RemoteFile]:
    infos = {i.path: i for i in api.get_paths_info(spec.location, list(files), revision=revision)}
    absent = [f for f in files if f not in infos]
    if absent:
        raise DownloadError(spec.id, "not-found", f"https://huggingface.co/{spec.location} has no {', '.join(absent)} "
                                                  "(the repo changed its layout?); update this model's spec.")
    return [RemoteFile(p, int(infos[p].size), infos[p].lfs.sha256 if infos[p].lfs else None) for p in files]


def _present(folder: Path, f: RemoteFile) -> bool:
    path = folder / f.path
    return path.is_file() and path.stat().st_size == f.size


def _check_space(spec: ModelSpec, folder: Path, todo: list[RemoteFile]) -> None:
    need = sum(f.size for f in todo)
    free = free_bytes(folder)
    if need > free:
        raise DownloadError(spec.id, "disk", f"it needs {_size(need)} more and the disk holding the models folder "
                                             f"has {_size(free)} free: free {_size(need - free)} (or set "
                                             "ICLR25_MODELS_DIR to a bigger disk) and run again.")


class _Tracker:
    """Bytes done across files; reports at most every ``_REPORT_EVERY_S`` seconds, checks Stop every chunk."""

    def __init__(self, model_id: str, total: int, already: int, report):
        self.model_id, self.total, self.report = model_id, total, report
        self.done_files = already
        self.current = 0
        self.fetched = 0
        self.file = ""
        self.first_chunk = False
        self.t0 = time.monotonic()
        self.last = 0.0

    def start_file(self, initial: int) -> None:
        self.current = initial
        self.first_chunk = True
        self.emit(force=True)  # each file is announced, with what an earlier run left of it

    def add(self, n: int) -> None:
        self.current += n
        self.fetched += n
        self.report.cancel.raise_if_cancelled()
        self.emit(force=self.first_chunk)  # and its first bytes: the download is moving (or resumed)
        self.first_chunk = False

    def finish_file(self, size: int) -> None:
        self.done_files += size
        self.current = 0

    def emit(self, force: bool = False, note: str = "") -> None:
        now = time.monotonic()
        if not force and now - self.last < _REPORT_EVERY_S:
            return
        self.last = now
        done = max(0, min(self.total, self.done_files + self.current))
        rate = self.fetched / max(now - self.t0, 1e-6)
        eta = (self.total - done) / rate if rate > 0 else None
        p = DownloadProgress(self.model_id, self.file or "all files", done, self.total, rate, eta)
        line = f"{p.line()} ({note})" if note else p.line()
        self.report(ProgressEvent(done / self.total if self.total else 1.0, line, preview=p))


def _bar_class(tracker: _Tracker):
    """A tqdm class for ``hf_hub_download(tqdm_class=…)``: every chunk it counts goes to ``tracker`` (which
    raises ``Cancelled`` there on Stop). It has ``update_transfer``, so a Xet download makes one bar of it (bytes
    written) rather than two; the bytes are counted once, in ``update``."""
    from huggingface_hub.utils import tqdm as hf_tqdm

    class _Bar(hf_tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)
            tracker.start_file(int(kwargs.get("initial") or 0))

        def update(self, n=1):
            tracker.add(int(n or 0))

        def update_transfer(self, n=1):
            pass  # the network's bytes: counted when written (update)

        def set_transfer_postfix_str(self, *args, **kwargs):
            pass

    return _Bar


class _hub_errors:
    """Turn what huggingface_hub and the OS raise into one :class:`DownloadError` that says what to do."""

    def __init__(self, spec: ModelSpec, folder: Path):
        self.spec, self.folder = spec, folder

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None or isinstance(exc, (DownloadError, Cancelled)) or not isinstance(exc, Exception):
            return False
        raise _explain(self.spec, self.folder, exc) from exc


def _explain(spec: ModelSpec, folder: Path, exc: BaseException) -> DownloadError:
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    page = f"https://huggingface.co/{spec.location}"
    chain, e = [], exc
    while e is not None and len(chain) < 8:
        chain.append(e)
        e = e.__cause__ or e.__context__
    for e in chain:
        if isinstance(e, OSError) and is_disk_full(e):
            return DownloadError(spec.id, "disk", "the disk filled while downloading; free some space and run again "
                                                  "(what was downloaded so far is kept and resumed).")
        if isinstance(e, GatedRepoError):
            return DownloadError(spec.id, "gated", f"{spec.location} is gated: accept the licence on {page} with your "
                                                   "Hugging Face account, then run `hf auth login` and try again.")
        if isinstance(e, OfflineModeIsEnabled):
            return DownloadError(spec.id, "offline", "the Hugging Face client is in offline mode (HF_HUB_OFFLINE=1); "
                                                     "run again with HF_HUB_OFFLINE=0.")
        if isinstance(e, HfHubHTTPError) and e.response is not None:
            status = e.response.status_code
            if status == 401 and "invalid credentials" in (e.response.headers.get("X-Error-Message") or "").lower():
                return DownloadError(spec.id, "auth", "the Hugging Face token was refused (wrong or expired): run "
                                                      "`hf auth login` with a valid token (or fix HF_TOKEN).")
            if isinstance(e, RemoteEntryNotFoundError):
                return DownloadError(spec.id, "not-found", f"a file of it is not on {page} (404); update this "
                                                           "model's spec.")
            if isinstance(e, (RepositoryNotFoundError, RevisionNotFoundError)) or status == 404:
                return DownloadError(spec.id, "not-found", f"{page} does not exist or is private (HTTP {status}); "
                                                           "check the repo id, or run `hf auth login` if it is yours.")
            if status in (401, 403):
                return DownloadError(spec.id, "gated", f"access to {spec.location} was refused (HTTP {status}): accept "
                                                       f"the licence on {page}, run `hf auth login` and try again.")
            return DownloadError(spec.id, "network", f"the Hub answered HTTP {status}; try again later.")
    if any(_is_network(e) for e in chain):
        return DownloadError(spec.id, "network", "cannot reach the Hugging Face Hub (no network, or a proxy or "
                                                 "firewall in the way); check the connection and run again — what "
                                                 "was downloaded so far is kept and resumed.")
    return DownloadError(spec.id, "failed", f"{type(exc).__name__}: {exc}. Run again to resume.")


def _is_network(e: BaseException) -> bool:
    """A transport failure of any of the HTTP stacks huggingface_hub may use (httpx, its httpx2 fork), a refused
    connection, a name that does not resolve, a timeout, or a file that came short."""
    import socket

    from huggingface_hub.errors import LocalEntryNotFoundError

    names = {c.__name__ for c in type(e).__mro__}
    return bool(names & {"TransportError", "NetworkError", "TimeoutException"}) or isinstance(
        e, (ConnectionError, TimeoutError, socket.gaierror, LocalEntryNotFoundError)) or (
        isinstance(e, OSError) and "consistency check failed" in str(e).lower())


# --- checking what was downloaded ------------------------------------------------------------------

def read_manifest(folder: Path) -> dict | None:
    try:
        return json.loads((Path(folder) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def verify_download(folder: Path) -> list[str] | None:
    """Problems of a downloaded model against the sha256 the hub published (None: no manifest to check against)."""
    manifest = read_manifest(folder)
    if manifest is None:
        return None
    problems = []
    for name, meta in manifest.get("files", {}).items():
        path = Path(folder) / name
        if not path.is_file():
            problems.append(f"{name} is missing from {folder}")
        elif meta.get("size") is not None and path.stat().st_size != meta["size"]:
            problems.append(f"{name} has {path.stat().st_size} bytes, the hub published {meta['size']}")
        elif meta.get("sha256") and sha256_file(path) != meta["sha256"]:
            problems.append(f"{name} has sha256 {sha256_file(path)[:12]}…, the hub published {meta['sha256'][:12]}…")
    return problems


def _size(n: float) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("kB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def _duration(s: float) -> str:
    s = int(round(s))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 60} min {s % 60} s" if s >= 60 else f"{s} s"
