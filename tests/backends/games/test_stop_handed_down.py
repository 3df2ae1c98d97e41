"""The games actions' Stop reaches the work that runs below the action — handed down as the job's token, never
found: an LLM speaking for an Avalon agent, a strategy looping in its sandbox at an MCTS leaf, the search agents of
an evaluation's games. Each test would hang or end otherwise than stopped (a timeout, a refusal) were the token
not handed to that work; none times anything: they count the calls and steps made after the Stop."""

import os
import threading
import uuid

import pytest

from backends.common.errors import Cancelled
from backends.common.progress import CancelToken
from backends.games.actions import AVALON_NEW, GOPS_PLAY
from backends.games.avalon import match as avalon
from backends.games.gops import match as gops
from backends.games.requests import AvalonMatchRequest, GopsMatchRequest, GopsPlayRequest

pytestmark = pytest.mark.timeout(180)  # a Stop that does not reach the work hangs here, not for the suite's 300 s


def _stop_when(condition, token: CancelToken) -> CancelToken:
    """``token``, cancelled by a helper thread as soon as ``condition()`` holds."""

    def watch():
        while not condition():
            threading.Event().wait(0.02)
        token.cancel()

    threading.Thread(target=watch, daemon=True).start()
    return token


def _run(action, request, cancel):
    return [item for item in action.run_here(request, cancel)]


class _SpeaksUntilStopped:
    """A test double of a language model whose answer never comes by itself: it waits on the token it is handed
    (none handed: it answers at once, and the test sees that no call was ended by the Stop)."""

    name = "speaks until stopped"

    def __init__(self):
        self.calls, self.ended_by_stop, self.speaking = 0, 0, threading.Event()

    def complete(self, messages, max_tokens=512, temperature=0.7, seed=None, cancel=None):
        from backends.games.strategist.llm import LLMReply

        self.calls += 1
        if cancel is None:
            return LLMReply("I trust this team.", self.name)
        self.speaking.set()
        while not cancel.wait(0.05):
            pass
        self.ended_by_stop += 1
        cancel.raise_if_cancelled()


def test_a_stopped_avalon_table_ends_the_llm_speech_under_way(monkeypatch):
    from backends.games.avalon.dialogue import LLMSpeaker

    llm = _SpeaksUntilStopped()
    monkeypatch.setattr(avalon, "_speaker", lambda guides=None: LLMSpeaker(llm, guides))
    held = len(avalon.MATCHES)
    token = _stop_when(llm.speaking.is_set, CancelToken())
    with pytest.raises(Cancelled):  # the agents speak before the Servant does at this deal
        _run(AVALON_NEW, AvalonMatchRequest(5, "Servant", True, seed=2, agents="search+llm"), token)
    assert llm.calls == 1 and llm.ended_by_stop == 1  # the speech was ended by the Stop; none came after it
    assert len(avalon.MATCHES) == held


def _sandbox_workers() -> set[int]:
    """This process's sandbox workers (earlier tests may keep theirs: the app's sandboxes are shared)."""
    out = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if b"sandbox_worker.py" in cmd and int(fields[1]) == os.getpid() and fields[0] != "Z":
            out.add(int(pid))
    return out


def test_a_stopped_gops_bid_kills_the_strategy_looping_in_its_sandbox():
    """The strategist opponent's strategy never returns: only the Stop, handed to its sandbox, ends the bid (the
    sandbox's own limit would end it as a refusal, InputError, after 26 s); its worker is killed."""
    from backends.games.strategist import sandbox

    source = f"tag = '{uuid.uuid4().hex}'\ndef evaluate_state(state):\n    while True:\n        pass\n"
    match_id, before = gops.start(GopsMatchRequest(5, opponent="strategist", simulations=100, seed=1,
                                                   strategy_source=source, strategy_name="loops"))
    running = _sandbox_workers()
    token = _stop_when(lambda: _sandbox_workers() - running, CancelToken())
    with pytest.raises(Cancelled):
        _run(GOPS_PLAY, GopsPlayRequest(match_id, 5), token)
    assert sandbox._SHARED[source]._proc is None  # its worker killed and reaped
    assert not _sandbox_workers() - running
    held = gops.MATCHES.get(match_id)
    assert held.state == before.state and 5 in held.state.hand(0)


def test_an_avalon_evaluation_stops_inside_the_game_under_way(monkeypatch):
    """In this process (``run_tasks`` hands its token to each game): stopped while a search agent weighs its third
    world, no world is weighed after it — of 4 games of many decisions of 8 worlds."""
    from backends.games.avalon import domain, search
    from backends.games.avalon.heuristics import BASELINE_SOURCE
    from backends.games.strategist.loop import Strategy

    token, worlds, real = CancelToken(), {"n": 0}, search.determinize

    def determinize(*args, **kw):  # one call per sampled world
        worlds["n"] += 1
        if worlds["n"] == 3:
            token.cancel()
        return real(*args, **kw)

    monkeypatch.setattr(search, "determinize", determinize)
    strategy = Strategy("s000", BASELINE_SOURCE, {"kind": "hand-written"}, game="avalon")
    with pytest.raises(Cancelled):
        domain.evaluate([strategy], domain.AvalonEvalSettings(games=4, worlds=8), seed=0, cancel=token)
    assert worlds["n"] == 3
