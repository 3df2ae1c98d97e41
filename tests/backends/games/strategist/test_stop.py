"""Stop means stopped at the next step inside STRATEGIST's work: the LLM between tokens (embedded model) or chunks
(an endpoint, also before its first chunk), a slow strategy in the sandbox (its worker killed), the self-play games
(between two search batches; in worker processes: the processes end), and a whole Improve run inside its evaluation
— and nothing it started is left running. No test here times anything: each counts the steps done after the Stop,
or checks that what was running is gone; pytest-timeout is the guard against a hang."""

import json
import multiprocessing
import os
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from backends.common.errors import Cancelled
from backends.common.progress import CancelToken

pytestmark = pytest.mark.timeout(180)  # a Stop that does not stop fails here, not after the suite's 300 s


def _stop_when(event: threading.Event, token: CancelToken | None = None) -> CancelToken:
    """``token`` (or a new one), cancelled as soon as ``event`` is set (by the work's other side)."""
    token = token or CancelToken()

    def stop():
        event.wait()
        token.cancel()

    threading.Thread(target=stop, daemon=True).start()
    return token


class _CountingToken(CancelToken):
    """A token that cancels itself the ``after``-th time the work asks whether it is cancelled, and counts the
    times it is asked after that (the steps the work took after the Stop)."""

    def __init__(self, after: int):
        super().__init__()
        self.after, self.asked, self.asked_after_stop = after, 0, 0

    @property
    def cancelled(self) -> bool:
        self.asked += 1
        if self.asked == self.after:
            self.cancel()
        elif self.asked > self.after:
            self.asked_after_stop += 1
        return super().cancelled


def test_the_embedded_llm_stops_between_tokens():
    from backends.common.settings import Settings
    from backends.games.strategist.llm import get_llm

    llm = get_llm(Settings(llm_base_url=None))
    token = _CountingToken(after=5)  # asked once per generated token: stopped at the fifth
    with pytest.raises(Cancelled):
        llm.complete([{"role": "user", "content": "Write a very long story about a dragon, at least 3000 words."}],
                     max_tokens=3000, temperature=0.7, seed=0, cancel=token)
    assert token.asked == 5 and token.asked_after_stop == 0  # no token generated after the one the Stop came at


class _Slow(BaseHTTPRequestHandler):
    """A chat-completions endpoint that is slow: ``/v1/stream`` streams a word every 0.1 s for a minute,
    ``/v1/silent`` says nothing for a minute. ``started`` is set once the client has its first word (or, silent,
    once the request came); ``ended`` once the endpoint saw the client go (a minute of nothing otherwise)."""

    started = threading.Event()
    ended = threading.Event()

    def do_POST(self):  # noqa: N802 - http.server's naming
        json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        try:
            if "/silent/" in self.path:
                _Slow.started.set()
                for _ in range(600):  # a closed client shows as a readable end of file
                    readable, _, _ = select.select([self.connection], [], [], 0.1)
                    if readable and self.connection.recv(1, socket.MSG_PEEK) == b"":
                        raise BrokenPipeError
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for i in range(600):
                chunk = {"choices": [{"delta": {"content": "word "}}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                if i == 2:
                    _Slow.started.set()
                time.sleep(0.1)
        except OSError:
            _Slow.ended.set()

    def log_message(self, *args):
        pass


@pytest.fixture
def slow_endpoint():
    _Slow.started, _Slow.ended = threading.Event(), threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.mark.parametrize("path", ["stream", "silent"])
def test_an_endpoint_llm_stops_mid_stream_and_before_its_first_chunk(slow_endpoint, path):
    """Stopped while the endpoint streams (or says nothing yet): the call ends with Cancelled, and the endpoint
    sees the request end — it would otherwise stream (or wait) for a minute, past this test's timeout."""
    from backends.games.strategist.llm import OpenAICompatibleLLM

    llm = OpenAICompatibleLLM(f"{slow_endpoint}/v1/{path}", "slow")
    token = _stop_when(_Slow.started)
    with pytest.raises(Cancelled):
        llm.complete([{"role": "user", "content": "go on"}], max_tokens=4000, cancel=token)
    _Slow.ended.wait()  # the endpoint saw the client go (pytest-timeout guards a client that stays)
    assert _Slow.ended.is_set() and token.cancelled


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
    from backends.games.strategist.sandbox import SandboxedFunction, SandboxLimits

    source = "def evaluate_state(state):\n    x = 0\n    while True:\n        x = x + 1\n    return (0, 0), {}\n"
    def workers() -> set[str]:  # this process's sandbox workers (earlier tests of the suite may keep theirs)
        return {p for p in os.listdir("/proc") if p.isdigit() and _is_sandbox_worker(p)}

    before = workers()
    fn = SandboxedFunction(source, limits=SandboxLimits(seconds_per_call=600.0))
    started = threading.Event()
    fn._start()  # the worker runs before the call, so the Stop comes while the strategy loops in it
    threading.Thread(target=lambda: (_wait_for(lambda: workers() - before), started.set()), daemon=True).start()
    token = _stop_when(started)
    with pytest.raises(Cancelled):
        fn.evaluate([{}], token)  # loops for ever (its call limit is 10 minutes): only the Stop ends it
    assert fn._proc is None  # closed: its worker was killed and reaped
    assert not workers() - before


def _wait_for(condition) -> None:
    """Until ``condition()`` holds (pytest-timeout guards a condition that never does)."""
    while not condition():
        time.sleep(0.02)


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
    time.sleep(0.5)  # most likely looping in the strategy by now (if not, it must end all the same)
    owner.kill()
    owner.wait()
    _wait_for(lambda: not _alive(worker))  # it would loop for 10 minutes: only its owner's end stops it
    assert not _alive(worker)


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


def test_self_play_games_stop_at_the_next_search_batch(counted_batches):
    """In this process: stopped during a search batch of the first game, no batch is played after it."""
    from backends.common.parallel import run_tasks
    from backends.games.gops.selfplay import play_task

    token = CancelToken()
    counted_batches["cancel_at"](3, token)
    with pytest.raises(Cancelled):
        run_tasks(play_task, _long_games(4), workers=1, cancel=token)
    assert counted_batches["n"] == 3  # four games of 13 moves of 200,000 simulations were to come


def test_self_play_games_in_worker_processes_stop_and_the_processes_end():
    """In worker processes (stopped once both run their games): the processes are gone when the call returns."""
    from backends.common.parallel import run_tasks
    from backends.games.gops.selfplay import play_task

    both = threading.Event()
    threading.Thread(target=lambda: (_wait_for(lambda: len(multiprocessing.active_children()) >= 2), both.set()),
                     daemon=True).start()
    token = _stop_when(both)
    with pytest.raises(Cancelled):
        run_tasks(play_task, _long_games(4), workers=2, cancel=token)
    assert not multiprocessing.active_children()


class _ScriptedLLM:
    """A test double (the product never uses it): the baseline heuristic with a small change, at once."""

    name = "scripted test double"

    def complete(self, messages, max_tokens=512, temperature=0.7, seed=None, cancel=None):
        from backends.games.gops.heuristics import BASELINE_SOURCE
        from backends.games.strategist.llm import LLMReply

        last = messages[-1]["content"]
        if "What do you conclude" in last:
            return LLMReply("It wastes high cards.", self.name)
        if "improvement ideas" in last:
            return LLMReply("1. Keep the top card for the top prize.", self.name)
        return LLMReply("```python\n" + BASELINE_SOURCE.replace('v0 = state["pot"] / 2', 'v0 = state["pot"] / 2 + 0.1')
                        + "```", self.name)


def test_an_improve_run_stops_inside_its_evaluation_at_the_next_search_batch(tmp_path, counted_batches):
    """The reproduced bug: Stop during Improve's evaluation games took minutes (it waited for the game to end). Now
    the run stops at the next search batch of the game under way (none is played after the one the Stop came in),
    its generator ends saying where it stopped, its worker thread is gone and no process is left."""
    from backends.games import improve as service

    req = service.ImproveRequest("gops", 5, "strategist", 40, 200, num_cards=13)  # games of 13 moves
    token = CancelToken()
    counted_batches["cancel_at"](3, token)  # inside the first evaluation game
    last = None
    for item in service.improve(req, None, lambda: tmp_path / "run", token, llm=_ScriptedLLM()):
        last = item
    assert counted_batches["n"] == 3
    assert last.status == "Stopped after iteration 0."
    assert not [t for t in threading.enumerate() if t.name == "stream-reports"]
    assert not multiprocessing.active_children()
