"""The real app in a process of its own on a loopback port: start, stop, restart, and its memory.

Benches that measure what users meet (the soak, first actions) need the server as a user runs it —
``launch(build_app())`` in a fresh process — not an app inside the test process. Its models folder
(and so its runs folder) and Gradio's temp folder are the caller's, so they outlive a restart.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAUNCH = "from app.main import build_app, launch; launch(build_app(), quiet=True)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def link_anny_cache(models_dir: Path) -> None:
    """anny's built model data (about a minute to rebuild, deterministic, not what is measured) linked
    in from the user's models folder when it is there; nothing derived from it is shared."""
    from backends.avatar import body
    from backends.common.settings import Settings

    user_cache = body.anny_cache_dir(Settings())
    mine = body.anny_cache_dir(Settings(models_dir=models_dir))
    if not user_cache.is_dir() or mine.exists():
        return
    mine.mkdir(parents=True)
    for entry in user_cache.iterdir():
        if entry.is_dir():
            (mine / entry.name).symlink_to(entry, target_is_directory=True)


class LiveServer:
    """One server process at a time on a fixed port, over persistent models and temp folders."""

    def __init__(self, models_dir: Path, temp_dir: Path, port: int | None = None, log: Path | None = None):
        self.models_dir, self.temp_dir = Path(models_dir), Path(temp_dir)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.proc: subprocess.Popen | None = None
        self.models_dir.mkdir(parents=True, exist_ok=True)
        self.temp_dir.mkdir(parents=True, exist_ok=True)
        link_anny_cache(self.models_dir)

    def start(self, timeout: float = 180.0) -> float:
        """Start and wait for HTTP 200 on ``/``; returns the seconds it took."""
        env = {**os.environ, "ICLR25_MODELS_DIR": str(self.models_dir), "GRADIO_TEMP_DIR": str(self.temp_dir),
               "ICLR25_PORT": str(self.port), "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115 — the child keeps it
        t0 = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-c", LAUNCH], cwd=ROOT, env=env, stdout=out,
                                     stderr=subprocess.STDOUT)
        while time.perf_counter() - t0 < timeout:
            if self.proc.poll() is not None:
                tail = self.log.read_text(errors="replace")[-3000:] if self.log and self.log.is_file() else ""
                raise RuntimeError(f"the server exited with code {self.proc.returncode}: {tail}")
            try:
                with urllib.request.urlopen(self.url, timeout=2) as r:
                    if r.status == 200:
                        return time.perf_counter() - t0
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"the server did not answer within {timeout:.0f} s")

    def stop(self, kill: bool = False, grace: float = 20.0) -> None:
        """SIGTERM (or SIGKILL with ``kill``) and wait; SIGKILL after ``grace`` seconds."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def restart(self) -> float:
        self.stop()
        return self.start()

    def rss_mb(self) -> float | None:
        """Resident memory of the server and its children (sandboxes, workers), MB; None when down."""
        import psutil

        if self.proc is None or self.proc.poll() is not None:
            return None
        try:
            root = psutil.Process(self.proc.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return None
        total = 0
        for p in procs:
            try:
                total += p.memory_info().rss
            except psutil.NoSuchProcess:
                pass
        return total / 2**20
