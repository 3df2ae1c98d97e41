"""Stop means stopped within 2 s inside STRATEGIST's work: the LLM between tokens (embedded model) or chunks
(an endpoint, also before its first chunk), a slow strategy in the sandbox (its worker killed), the
self-play games (also in worker processes), and a whole Improve run in its evaluation — and nothing it
started is left running."""

import json
import multiprocessing
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from backends.common.errors import Cancelled
from backends.common.progress import CancelToken, ProgressEvent, cancel_scope

STOP_WITHIN_S = 2.0


def _stop_after(seconds: float, token: CancelToken | None = None) -> tuple[CancelToken, dict]:
    """``token`` (or a new one) cancelled ``seconds`` from now; ``when["t"]`` is the moment it was."""
    token, when = token or CancelToken(), {}

    def stop():
        when["t"] = time.monotonic()
        token.cancel()

    threading.Timer(seconds, stop).start()
    return token, when


def test_the_embedded_llm_stops_between_tokens():
    from backends.common.settings import Settings
    from backends.games.strategist.llm import get_llm

    llm = get_llm(Settings(llm_base_url=None))
    llm.complete([{"role": "user", "content": "Hi"}], max_tokens=1, temperature=0.0)  # loaded before timing
    token, when = _stop_after(1.0)
    with cancel_scope(token), pytest.raises(Cancelled):
        llm.complete([{"role": "user", "content": "Write a very long story about a dragon, at least 3000 words."}],
                     max_tokens=3000, temperature=0.7, seed=0)
    assert time.monotonic() - when["t"] < STOP_WITHIN_S


class _Slow(BaseHTTPRequestHandler):
    """A chat-completions endpoint that is slow: ``/v1/stream`` streams a word every 0.1 s for a minute,
    ``/v1/silent`` says nothing for a minute. ``ended`` records when the endpoint saw the client go."""

    ended: list = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        try:
            if "/silent/" in self.path:
                for _ in range(600):  # a closed client shows as a readable end of file
                    readable, _, _ = select.select([self.connection], [], [], 0.1)
                    if readable and self.connection.recv(1, socket.MSG_PEEK) == b"":
                        raise BrokenPipeError
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for _ in range(600):
                chunk = {"choices": [{"delta": {"content": "word "}}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:
            _Slow.ended.append(time.monotonic())

    def log_message(self, *args):
        pass


@pytest.fixture
def slow_endpoint():
    _Slow.ended = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.mark.parametrize("path", ["stream", "silent"])
def test_an_endpoint_llm_stops_mid_stream_and_before_its_first_chunk(slow_endpoint, path):
    from backends.games.strategist.llm import OpenAICompatibleLLM

    llm = OpenAICompatibleLLM(f"{slow_endpoint}/v1/{path}", "slow")
    token, when = _stop_after(0.8)
    with cancel_scope(token), pytest.raises(Cancelled):
        llm.complete([{"role": "user", "content": "go on"}], max_tokens=4000)
    assert time.monotonic() - when["t"] < STOP_WITHIN_S
    deadline = time.monotonic() + 3
    while not _Slow.ended and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _Slow.ended and _Slow.ended[0] - when["t"] < STOP_WITHIN_S  # the endpoint saw the request end


def test_an_endpoint_that_does_not_stream_is_still_read():
    """An endpoint that ignores ``"stream": true`` and answers with one JSON body works as before."""

    class Plain(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            data = json.dumps({"choices": [{"message": {"content": f"stream={body['stream']}"}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a):
            pass

    from backends.games.strategist.llm import OpenAICompatibleLLM

    server = ThreadingHTTPServer(("127.0.0.1", 0), Plain)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert OpenAICompatibleLLM(f"http://127.0.0.1:{server.server_port}/v1", "m").complete(
            [{"role": "user", "content": "x"}]).text == "stream=True"
    finally:
        server.shutdown()


def test_a_slow_strategy_in_the_sandbox_stops_and_its_worker_is_killed():
    import os

    from backends.games.strategist.sandbox import SandboxedFunction, SandboxLimits

    source = "def evaluate_state(state):\n    x = 0\n    while True:\n        x = x + 1\n    return (0, 0), {}\n"
    def workers() -> set[str]:  # this process's sandbox workers (earlier tests of the suite may keep theirs)
        return {p for p in os.listdir("/proc") if p.isdigit() and _is_sandbox_worker(p)}

    before = workers()
    fn = SandboxedFunction(source, limits=SandboxLimits(seconds_per_call=60.0))
    token, when = _stop_after(1.5)
    with cancel_scope(token), pytest.raises(Cancelled):
        fn.evaluate([{}])
    assert time.monotonic() - when["t"] < STOP_WITHIN_S
    assert fn._proc is None  # closed: its worker was killed and reaped
    assert not workers() - before


def test_a_sandbox_worker_ends_when_the_process_that_owns_it_is_killed():
    """A stopped job's game processes are killed; a strategy looping in their sandbox must not run on."""
    import subprocess
    import sys

    owner = subprocess.Popen([sys.executable, "-c", (
        "from backends.games.strategist.sandbox import SandboxedFunction, SandboxLimits\n"
        "fn = SandboxedFunction('def evaluate_state(state):\\n    while True:\\n        pass\\n', "
        "limits=SandboxLimits(seconds_per_call=600))\n"
        "fn._start(); print(fn._proc.pid, flush=True); fn.evaluate([{}])\n")],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[4])
    worker = int(owner.stdout.readline())
    time.sleep(0.5)
    owner.kill()
    owner.wait()
    killed = time.monotonic()
    while _alive(worker) and time.monotonic() - killed < 10:
        time.sleep(0.05)
    assert not _alive(worker) and time.monotonic() - killed < STOP_WITHIN_S


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended (only not yet reaped)
    except OSError:
        return False


def _is_sandbox_worker(pid: str) -> bool:
    import os

    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
        with open(f"/proc/{pid}/stat") as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return False
    return b"sandbox_worker.py" in cmd and ppid == os.getpid()


def _long_games(n: int):
    from backends.games.gops.selfplay import match_tasks

    return match_tasks("mcts", None, "mcts", None, games=n, cards=13, tie_rule="discard", simulations=200_000, seed=1)


@pytest.mark.parametrize("workers", [1, 2])
def test_self_play_games_stop_and_their_worker_processes_end(workers):
    from backends.common.parallel import run_tasks
    from backends.games.gops.selfplay import play_task

    token, when = _stop_after(1.5 if workers == 1 else 4.0)  # processes: after the workers have started
    with cancel_scope(token), pytest.raises(Cancelled):
        run_tasks(play_task, _long_games(4), workers=workers)
    assert time.monotonic() - when["t"] < STOP_WITHIN_S
    assert not multiprocessing.active_children()


class _ScriptedLLM:
    """A test double (the product never uses it): the baseline heuristic with a small change, at once."""

    name = "scripted test double"

    def complete(self, messages, max_tokens=512, temperature=0.7, seed=None):
        from backends.games.gops.heuristics import BASELINE_SOURCE
        from backends.games.strategist.llm import LLMReply

        last = messages[-1]["content"]
        if "What do you conclude" in last:
            return LLMReply("It wastes high cards.", self.name)
        if "improvement ideas" in last:
            return LLMReply("1. Keep the top card for the top prize.", self.name)
        return LLMReply("```python\n" + BASELINE_SOURCE.replace('v0 = state["pot"] / 2', 'v0 = state["pot"] / 2 + 0.1')
                        + "```", self.name)


def test_an_improve_run_stops_within_two_seconds_in_its_evaluation(tmp_path):
    """The reproduced bug: Stop during Improve's evaluation games took minutes. Now the run ends (its
    generator finished, its worker thread gone, no sandbox left) within 2 s, and says where it stopped."""
    from backends.games import improve as service

    req = service.ImproveRequest("gops", 5, "strategist", 40, 10_000, {"num_cards": 13})  # games of many seconds
    token, when, last = CancelToken(), None, None
    for item in service.improve(req, None, lambda: tmp_path / "run", token, llm=_ScriptedLLM()):
        if isinstance(item, ProgressEvent) and "LLM writes" in item.message and when is None:
            _, when = _stop_after(1.5, token)  # inside the first evaluation game
        last = item
    assert when and time.monotonic() - when["t"] < STOP_WITHIN_S
    assert last.status == "Stopped after iteration 0."
    assert not [t for t in threading.enumerate() if t.name == "stream-reports"]
    assert not multiprocessing.active_children()
