"""Shared fixtures: isolated settings per test, and one live app per test session.

The live app runs in this process on a free loopback port (``prevent_thread_lock=True``); app tests
talk to it through ``gradio_client`` and browser tests through Playwright.
"""

from __future__ import annotations

import functools
import os
import socket
from pathlib import Path

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from backends.common import settings as settings_mod  # noqa: E402

# gradio_client's requests (the app's config first) time out after httpx's default 5 s; on this 2-core machine
# with the whole suite running, the config of an app of many tabs can take longer to come. The tests' clients
# wait as long as a test may last (pytest-timeout ends a hung one); a stream's silence is broken by the
# server's heartbeats.
PATIENT_CLIENT_TIMEOUT_S = 300.0


def _patient_gradio_clients() -> None:
    from gradio_client import client as gradio_client

    init = gradio_client.Client.__init__

    @functools.wraps(init)
    def patient_init(self, *args, httpx_kwargs=None, **kwargs):
        init(self, *args, httpx_kwargs={"timeout": PATIENT_CLIENT_TIMEOUT_S, **(httpx_kwargs or {})}, **kwargs)

    gradio_client.Client.__init__ = patient_init


_patient_gradio_clients()

# anny's first build on a new machine (into the user's models folder, once) runs on one core for minutes:
# 4 minutes were seen with another job on the second core, near the suite's 300 s per test. Tests that may be
# the first to build it (avatar tests, and those that load the body model) get this limit instead.
ANNY_FIRST_BUILD_TIMEOUT_S = 900


@functools.cache
def _may_build_anny(path: Path) -> bool:
    text = path.read_text(errors="ignore") if path.suffix == ".py" else ""
    return "avatar" in path.as_posix() or "body_model" in text or "anny" in text


def _xdist_group(path: Path) -> str:
    """Which pytest-xdist worker group a test file runs in (``--dist loadgroup``): a file's tests stay together
    (its module fixtures are built once), and every file that may build anny shares one worker, so the
    minute-long build happens once per run, not once per worker."""
    return "anny" if _may_build_anny(path) else path.as_posix()


def pytest_collection_modifyitems(config, items):
    distributed = getattr(config.option, "dist", "no") != "no"
    for item in items:
        path = Path(item.path)
        if item.get_closest_marker("timeout") is None and _may_build_anny(path):
            item.add_marker(pytest.mark.timeout(ANNY_FIRST_BUILD_TIMEOUT_S))
        if distributed and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(_xdist_group(path)))


_EXIT_STATUS: list[int] = []


def pytest_sessionfinish(session, exitstatus):
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """The process ends with pytest's verdict, not with what the interpreter's shutdown does afterwards: the live
    app's daemon threads (a model warm-up that a page started) may still be inside torch when Python tears down
    (``terminate called without an active exception``, exit 134), and open3d sets exit status 1 whenever its
    allocator still holds memory at exit (isl-org/Open3D#3666). Everything pytest reports is written by now."""
    if _EXIT_STATUS:
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[-1])


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory, monkeypatch):
    """Each test starts from the environment's settings with an empty models folder of its own."""
    for key in list(os.environ):
        if key.startswith("ICLR25_") and key not in ("ICLR25_REQUIRE_BROWSER", "ICLR25_ASSETS_DIR"):
            monkeypatch.delenv(key)
    models_dir = tmp_path_factory.mktemp("models")
    monkeypatch.setenv("ICLR25_MODELS_DIR", str(models_dir))
    saved = settings_mod._current
    settings_mod.reset_settings()
    yield
    settings_mod._current = saved


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def live_app(tmp_path_factory):
    """The whole app, launched once for the session; yields (demo, url)."""
    from app.main import build_app, launch
    from backends.common.settings import Settings

    models_dir = tmp_path_factory.mktemp("live-models")
    os.environ["GRADIO_TEMP_DIR"] = str(tmp_path_factory.mktemp("gradio-tmp"))
    settings = Settings(models_dir=models_dir, port=free_port())
    saved = settings_mod._current
    settings_mod._current = settings
    demo = build_app(settings)
    _, url, _ = launch(demo, settings, prevent_thread_lock=True, quiet=True, mcp_server=True)
    settings_mod._current = saved
    yield demo, url.rstrip("/")
    demo.close()


@pytest.fixture(scope="session")
def client(live_app):
    from gradio_client import Client

    _, url = live_app
    c = Client(url, verbose=False)
    yield c
    c.close()


@pytest.fixture
def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


@pytest.fixture
def hub(monkeypatch):
    """A Hugging Face hub on loopback (``tests.hubserver``) that huggingface_hub's real client talks to
    (``HF_ENDPOINT``), online, with no token of this machine sent; add repos to ``hub.repos``."""
    import huggingface_hub.constants as constants

    from tests.hubserver import HubServer

    server = HubServer()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", os.devnull)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    yield server
    server.close()


@pytest.fixture
def scripted_endpoint():
    """An OpenAI-compatible chat-completions server on loopback that answers with ``reply(body)`` — a
    test double for an LLM endpoint (the product never uses it). Yields a function that starts one and
    returns its base URL; every server stops when the test ends."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    servers = []

    def start(reply) -> str:
        class Scripted(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                data = json.dumps({"choices": [{"message": {"content": reply(body)}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        server = HTTPServer(("127.0.0.1", 0), Scripted)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}/v1"

    yield start
    for server in servers:
        server.shutdown()

