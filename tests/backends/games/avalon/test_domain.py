"""STRATEGIST on Avalon: heuristic runs and dialogue-guide runs end to end with a scripted language model
(a test double that answers from a fixed script and says so in its name; the product never uses it)."""

import json

import pytest

from backends.common.errors import InputError
from backends.games import domains
from backends.games.avalon.dialogue import DEFAULT_GUIDES
from backends.games.avalon.domain import (
    AvalonDomain,
    AvalonEvalSettings,
    evaluate,
    guide_feedback,
    heuristic_feedback,
)
from backends.games.avalon.heuristics import BASELINE_SOURCE
from backends.games.strategist.llm import LLMReply
from backends.games.strategist.loop import StrategistRun, Strategy, best_of_library, diff_against_parent
from backends.games.strategist.sandbox import SandboxError
from backends.games.strategist.text import extract_guide

CAUTIOUS = BASELINE_SOURCE.replace("q = 0.5", "q = 0.4")
NEW_GUIDE = ("Speak briefly. Name the player whose votes backed failed teams and say: I suspect player X. "
             "Never accuse a player who was on a successful quest.")


class ScriptedLLM:
    name = "scripted test double"

    def __init__(self):
        self.calls = []

    def complete(self, messages, max_tokens=512, temperature=0.7, seed=None, cancel=None):
        last = messages[-1]["content"]
        self.calls.append(last)
        if "Say your turn" in last:
            return LLMReply("I suspect player 1. Let us keep player 1 off the team.", self.name)
        if "What do you conclude" in last:
            return LLMReply("Too optimistic about the quests.", self.name)
        if "improvement ideas" in last:
            return LLMReply("1. Lower the chance that a quest succeeds.\n2. Weigh rejections more.", self.name)
        if "guide" in messages[0]["content"] and "dialogue guides" in messages[0]["content"]:
            return LLMReply(f"```\n{NEW_GUIDE}\n```", self.name)
        return LLMReply(f"```python\n{CAUTIOUS}```", self.name)


def _settings(**kw):
    return AvalonEvalSettings(**{"games": 2, "worlds": 2, **kw})


def test_guides_are_plain_words_of_sensible_length():
    assert extract_guide(f"Here:\n```\n{NEW_GUIDE}\n```") == NEW_GUIDE
    for bad in ("ok", "```\nimport os\nprint(1) and more words to pass the length check\n```"):
        with pytest.raises(SandboxError):
            extract_guide(bad)


def test_evaluation_scores_working_heuristics_and_rejects_broken_ones():
    good = Strategy("g", BASELINE_SOURCE, {"kind": "hand-written"}, game="avalon")
    broken = Strategy("b", "def evaluate_state(state):\n    return state['nope']\n", {"kind": "llm-seed"}, game="avalon")
    scores, errors = evaluate([good, broken], _settings(), seed=0)
    assert set(scores) == {"g"} and 0 <= scores["g"] <= 1 and "KeyError" in errors["b"]


def test_feedback_names_decisions_values_and_outcomes():
    s = Strategy("g", BASELINE_SOURCE, {"kind": "hand-written"}, game="avalon")
    text = heuristic_feedback(s, _settings(), seed=0, games=1)
    assert "Game 1:" in text and "P(good wins) =" in text and "playouts from there" in text
    s.guide = dict(DEFAULT_GUIDES)
    text = guide_feedback(s, _settings(part="guide"), ScriptedLLM(), seed=0)
    assert "I suspect player 1" in text and "Accusations that named a truly evil player" in text


@pytest.mark.parametrize("method", ["strategist", "beam"])
def test_a_heuristic_run_improves_logs_and_resumes(tmp_path, method):
    llm = ScriptedLLM()
    run = StrategistRun(tmp_path, llm, _settings(), method=method, fittest=1, children=1, seed=1)
    records = [r for r in run.run(iterations=1) if isinstance(r, dict)]
    assert records[0]["event"] == "seeded" and records[0]["game"] == "avalon"
    lib = json.loads((tmp_path / "library.json").read_text())
    assert {s["game"] for s in lib} == {"avalon"} and all(s["guide"] == DEFAULT_GUIDES for s in lib)
    child = [s for s in lib if s["origin"]["kind"] in ("llm-idea", "llm-beam")]
    assert child and child[0]["source"].strip() == CAUTIOUS.strip()
    assert json.loads((tmp_path / "strategist.json").read_text())["part"] == "heuristic"
    resumed = StrategistRun(tmp_path, llm, _settings(), method=method)
    assert resumed.iteration == 1 and resumed.llm_calls == run.llm_calls
    with pytest.raises(InputError, match="avalon"):  # a GOPS run cannot continue an Avalon library
        StrategistRun(tmp_path, llm, domains.create("gops"))


def test_a_guide_run_changes_only_the_guide_of_its_side(tmp_path):
    llm = ScriptedLLM()
    run = StrategistRun(tmp_path, llm, _settings(part="guide", games=1), fittest=1, children=1, seed=2)
    list(run.run(iterations=1))
    kids = [s for s in run.library.items.values() if s.origin["kind"] == "llm-idea"]
    assert kids and kids[0].guide["good"] == NEW_GUIDE and kids[0].guide["evil"] == DEFAULT_GUIDES["evil"]
    assert kids[0].source == run.library.items["s000"].source
    assert any("Say your turn" in c for c in llm.calls)  # the evaluation games spoke through the LLM
    assert "+#   Speak briefly." in diff_against_parent(run.library, kids[0].id)
    assert best_of_library(tmp_path, game="avalon").game == "avalon"
    with pytest.raises(InputError, match="not for gops"):
        best_of_library(tmp_path, game="gops")


def test_unknown_parts_are_refused():
    with pytest.raises(ValueError, match="part"):
        AvalonDomain(AvalonEvalSettings(part="speech"))


def test_a_run_folder_says_what_it_improves(tmp_path):
    import shutil

    from backends.games.strategist.loop import run_kind

    run = StrategistRun(tmp_path / "g", ScriptedLLM(), _settings(part="guide", games=1, guide_side="evil"), fittest=1)
    run.start(llm_seeds=0)
    assert run_kind(tmp_path / "g")[0] == "avalon-guide"
    assert run_kind(tmp_path / "g")[1]["guide_side"] == "evil"
    saved = (tmp_path / "g" / "strategist.json").read_text()
    (tmp_path / "g" / "strategist.json").unlink()
    (tmp_path / "g" / "run.json").write_text(saved)  # a run saved before the run card took run.json's name
    assert run_kind(tmp_path / "g") == ("avalon-guide", json.loads(saved)["settings"])
    (tmp_path / "g" / "run.json").unlink()  # a run saved before it recorded its settings: the game of its strategies
    assert run_kind(tmp_path / "g")[0] == "avalon-heuristic"
    shutil.rmtree(tmp_path / "g")
    assert run_kind(tmp_path / "g")[0] == "gops"
