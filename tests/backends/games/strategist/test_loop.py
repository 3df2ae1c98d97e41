"""The STRATEGIST loop end to end with a scripted language model (a test double: it answers from a
fixed script and says so in its name; the product never uses it)."""

import json

import numpy as np
import pytest

from backends.common.errors import InputError
from backends.games.gops.domain import EvalSettings, evaluate
from backends.games.gops.heuristics import BASELINE_SOURCE
from backends.games.strategist.loop import IdeaLibrary, StrategistRun, Strategy
from backends.games.strategist.text import extract_code, parse_ideas

VARIANT = BASELINE_SOURCE.replace('"expected_p0": v0', '"expected_p0": v0, "bonus": 0.5').replace(
    "return (state[\"p0_score\"] + v0,", "return (state[\"p0_score\"] + v0 + 0.5 * len(state[\"p0_hand\"]) / 10,")


class ScriptedLLM:
    name = "scripted test double"

    def __init__(self):
        self.calls = []
        self.bad_first = True

    def complete(self, messages, max_tokens=512, temperature=0.7, seed=None, cancel=None):
        from backends.games.strategist.llm import LLMReply

        last = messages[-1]["content"]
        self.calls.append(last)
        if "What do you conclude" in last:
            text = "It spends high cards on small prizes."
        elif "improvement ideas" in last:
            text = "1. Value keeping the highest card.\n2) Weigh prizes by their size.\n3. Count the pot twice."
        elif self.bad_first:
            self.bad_first = False
            text = "```python\nimport os\ndef evaluate_state(state):\n    return (0, 0), {}\n```"
        else:
            text = f"Here you go:\n```python\n{VARIANT}```"
        return LLMReply(text, self.name)


def test_parsing_ideas_and_code():
    assert parse_ideas("Intro\n1. First idea here\n2) Second idea here\n- not this") == ["First idea here", "Second idea here"]
    assert extract_code("text ```python\ndef evaluate_state(s):\n    return (1, 2), {}\n```").startswith("def evaluate_state")
    assert extract_code("sure: def evaluate_state(s):\n    return (1, 2), {}").startswith("def evaluate_state")


def test_idea_bandit_prefers_untried_and_rewarded_ideas():
    lib = IdeaLibrary()
    for idea in ("a", "b", "c"):
        lib.add(idea)
    lib.reward("a", 0.3)
    lib.reward("b", -0.3)
    assert lib.ucb("c") > lib.ucb("a") > lib.ucb("b")  # untried first, then the better mean
    picks = [lib.sample(np.random.default_rng(i)) for i in range(200)]
    assert picks.count("c") > picks.count("b")


def test_evaluation_scores_strategies_and_rejects_broken_ones():
    good = Strategy("g", BASELINE_SOURCE, {"kind": "hand-written"})
    broken = Strategy("b", "def evaluate_state(state):\n    return (1, 2, 3)\n", {"kind": "llm-seed"})
    scores, errors = evaluate([good, broken], EvalSettings(num_cards=4, games_per_pair=2, simulations=8), seed=0)
    assert set(scores) == {"g"} and 0 <= scores["g"] <= 1
    assert "b" in errors


@pytest.mark.parametrize("method", ["strategist", "beam"])
def test_a_run_improves_logs_and_resumes(tmp_path, method):
    llm = ScriptedLLM()
    settings = EvalSettings(num_cards=4, games_per_pair=2, simulations=8, benchmark_rollouts=4)
    run = StrategistRun(tmp_path, llm, settings, method=method, fittest=1, children=1, seed=1)
    records = [r for r in run.run(iterations=2) if isinstance(r, dict)]
    assert records[0]["event"] == "seeded" and records[0]["llm_calls"] >= 2  # the first seed was rejected once
    assert [r["iteration"] for r in records[1:]] == [1, 2]
    lib = json.loads((tmp_path / "library.json").read_text())
    origins = {s["origin"]["kind"] for s in lib}
    assert "hand-written" in origins and "llm-seed" in origins
    assert ("llm-idea" if method == "strategist" else "llm-beam") in origins
    assert all(s["origin"].get("llm") == "scripted test double" for s in lib if s["origin"]["kind"] != "hand-written")
    if method == "strategist":
        assert len(run.ideas.arms) == 3 and any(records[i]["rewards"] for i in (1, 2))
    log = (tmp_path / "log.jsonl").read_text().splitlines()
    resumed = StrategistRun(tmp_path, llm, settings, method=method)
    assert resumed.iteration == 2 and len(resumed.library.items) == len(lib) and len(log) >= 3
    assert resumed.llm_calls == run.llm_calls


def test_views_for_the_tab(tmp_path):
    from backends.games.strategist.loop import diff_against_parent, library_rows, score_curve

    run = StrategistRun(tmp_path, ScriptedLLM(), EvalSettings(num_cards=4, games_per_pair=2, simulations=8,
                                                              benchmark_rollouts=4), fittest=1, children=1)
    list(run.run(iterations=1))
    rows = library_rows(run.library)
    assert rows[0][4] == max(r[4] for r in rows if r[4] is not None)
    assert [c["iteration"] for c in score_curve(run.dir)] == [0, 1]
    children = [r[0] for r in rows if r[3]]
    assert children
    for child in children:  # a diff against the parent; empty only when the LLM returned the parent's code
        s = run.library.items[child]
        same = s.source == run.library.items[s.origin["parent"]].source
        assert (diff_against_parent(run.library, child) == "") == same
        assert same or "+++ " + child in diff_against_parent(run.library, child)


def test_a_saved_run_loads_into_a_new_folder_and_continues(tmp_path):
    from backends.games.strategist.loop import best_of_library, import_run_files

    settings = EvalSettings(num_cards=4, games_per_pair=2, simulations=8, benchmark_rollouts=4)
    run = StrategistRun(tmp_path / "a", ScriptedLLM(), settings, fittest=1, children=1)
    list(run.run(iterations=1))
    files = [tmp_path / "a" / n for n in ("library.json", "ideas.json", "log.jsonl")]
    library = import_run_files(files, tmp_path / "b")
    assert set(library.items) == set(run.library.items)
    assert best_of_library(tmp_path / "b").id == run.library.top(1)[0].id
    resumed = StrategistRun(tmp_path / "b", ScriptedLLM(), settings, fittest=1, children=1)
    assert resumed.iteration == 1 and resumed.llm_calls == run.llm_calls


def test_loading_refuses_what_is_not_a_safe_library(tmp_path):
    from backends.games.strategist.loop import import_run_files

    bad = tmp_path / "library.json"
    bad.write_text('[{"id": "s0", "source": "import os\\ndef evaluate_state(s):\\n  return 1", "origin": {}}]')
    with pytest.raises(InputError, match="refused"):
        import_run_files([bad], tmp_path / "run")
    bad.write_text('{"not": "a list"}')
    with pytest.raises(InputError, match="Not a strategy library"):
        import_run_files([bad], tmp_path / "run")
    with pytest.raises(InputError, match="library.json"):
        import_run_files([tmp_path / "ideas.json"], tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_log_line_cut_short_by_a_killed_process_is_dropped_on_resume(tmp_path):
    from backends.games.strategist.loop import read_log, score_curve

    log = tmp_path / "log.jsonl"
    good = [{"event": "seeded", "iteration": 0, "scores": {"a": 0.25}}, {"iteration": 1, "best_score": 0.5}]
    log.write_text("".join(json.dumps(r) + "\n" for r in good) + '{"iteration": 2, "best_sc')
    assert read_log(log) == good
    assert [p["best score"] for p in score_curve(tmp_path)] == [0.25, 0.5]
    log.write_text('{"iteration": 1, "be\n' + json.dumps(good[1]) + "\n")  # damage before the end is not a cut
    with pytest.raises(json.JSONDecodeError):
        read_log(log)
