"""The improvement-run service shared by the Improve tab and the CLI: which run a request continues, the
games' defaults, loading a run, and the strategy the strategist agents play."""

import json
import shutil

import pytest

from backends.common.errors import InputError
from backends.common.params import check_request, field_spec
from backends.games import domains
from backends.games import improve as service
from backends.games.gops.match import GopsMatchRequest, new_match
from backends.games.requests import ImproveRequest
from tests.backends.games.strategist.test_loop import ScriptedLLM


def _gops(**kw) -> service.ImproveRequest:
    return service.ImproveRequest("gops", 1, games=2, budget=8, num_cards=4, **kw)


def test_every_registered_game_has_run_kinds_with_defaults():
    kinds = domains.run_kinds()
    assert tuple(kinds) == field_spec(ImproveRequest, "kind").param.choices  # the request's choices, the same
    assert {"gops", "avalon-heuristic", "avalon-guide"} <= set(kinds)
    assert service.defaults("gops") == (4, 16) and service.defaults("avalon-guide") == (8, 8)
    assert domains.parse_kind("avalon-guide") == ("avalon", "guide") and domains.parse_kind("gops") == ("gops", "heuristic")
    with pytest.raises(InputError, match="Unknown game"):
        domains.parse_kind("chess")
    with pytest.raises(InputError, match="improves"):
        domains.parse_kind("gops-guide")
    for bad in (service.ImproveRequest("gops", 0), service.ImproveRequest("gops", method="greedy"),
                service.ImproveRequest("gops", games=0), service.ImproveRequest("gops-guide")):
        with pytest.raises(InputError):
            check_request(bad)
            bad.validate()
    with pytest.raises(InputError, match="3 to 13"):
        service.settings_for(service.ImproveRequest("gops", num_cards=40))
    settings = service.settings_for(service.ImproveRequest("avalon-guide", guide_side="evil"))
    assert (settings.part, settings.guide_side, settings.games, settings.worlds) == ("guide", "evil", 8, 8)


def test_a_request_continues_only_a_run_of_its_kind(tmp_path):
    made = []

    def new_dir():
        made.append(tmp_path / f"new{len(made)}")
        return made[-1]

    updates = [u for u in service.improve(_gops(), None, new_dir, llm=ScriptedLLM())
               if isinstance(u, service.ImproveUpdate)]
    run = made[0]
    assert updates[-1].view.run_dir == str(run) and "Iteration 1" in updates[-1].status
    assert updates[-1].record["iteration"] == 1 and updates[-1].view.ids
    assert service.continues(run, _gops()) and not service.continues(run, service.ImproveRequest("avalon-heuristic"))
    assert not service.continues(None, _gops())
    (run / "strategist.json").write_text(json.dumps({"game": "avalon", "part": "guide", "settings": {"guide_side": "good"}}))
    assert service.continues(run, service.ImproveRequest("avalon-guide", guide_side="good"))
    assert not service.continues(run, service.ImproveRequest("avalon-guide", guide_side="evil"))


def test_loading_a_run_sets_the_controls_and_its_best_strategy_plays(tmp_path):
    shipped = domains.shipped_library("avalon").parent
    files = [shipped / n for n in ("library.json", "ideas.json", "log.jsonl", "run.json") if (shipped / n).exists()]
    loaded = service.load_run(files, tmp_path / "run")
    assert loaded.kind.startswith("avalon") and loaded.games >= 1 and loaded.budget >= 1
    assert "Loaded" in loaded.status and loaded.view.ids
    # the shipped run was saved before the run card took run.json's name: its settings are read from there
    assert json.loads((tmp_path / "run" / "strategist.json").read_text())["game"] == "avalon"
    chosen = service.strategy_for_play("avalon", tmp_path / "run")
    assert chosen.source and chosen.name.startswith(loaded.view.ids[0])
    gops = service.strategy_for_play("gops", tmp_path / "run")  # an Avalon run: GOPS plays the shipped one
    assert gops.source == service.strategy_for_play("gops").source
    text, diff = service.strategy_source(tmp_path / "run", loaded.view.ids[0])
    assert "def evaluate_state" in text
    with pytest.raises(InputError, match="No strategy"):
        service.strategy_source(tmp_path / "run", "s999")


def test_a_match_resolves_its_strategy_and_keeps_no_server_path(tmp_path):
    shutil.copytree(domains.shipped_library("gops").parent, tmp_path / "run")
    match = new_match(GopsMatchRequest(5, opponent="strategist", simulations=50, strategy_run=str(tmp_path / "run")))
    assert match.request.strategy_source and match.request.strategy_name
    assert match.request.strategy_run is None and str(tmp_path) not in match.to_json()


def test_progress_comes_per_evaluated_game_and_stop_ends_the_evaluation(tmp_path):
    from backends.common.progress import CancelToken, ProgressEvent

    request = service.ImproveRequest("gops", 1, games=3, budget=8, num_cards=4)
    events = [e for e in service.improve(request, None, lambda: tmp_path / "a", llm=ScriptedLLM())
              if isinstance(e, ProgressEvent)]
    seeding = [e.message for e in events if e.message.startswith("seeding: evaluation")]
    # the baseline, the LLM's seed and the benchmark: 3 pairs of 3 games, each reported
    assert seeding == [f"seeding: evaluation: game {k}/9" for k in range(1, 10)]
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and 0 < fractions[len(seeding)] < 1 and fractions[-1] == 1.0
    assert any("iteration 1: evaluation: game" in e.message for e in events)

    token = CancelToken()
    seen = []
    for item in service.improve(service.ImproveRequest("gops", 5, games=40, budget=8, num_cards=4),
                                None, lambda: tmp_path / "b", token, llm=ScriptedLLM()):
        seen.append(item)
        if isinstance(item, ProgressEvent) and item.message == "seeding: evaluation: game 2/120":
            token.cancel()
    last = seen[-1]
    assert isinstance(last, service.ImproveUpdate) and last.status == "Stopped after iteration 0."
    games = [e for e in seen if isinstance(e, ProgressEvent) and "evaluation: game" in e.message]
    assert len(games) <= 4  # stopped inside the evaluation, within a game or two of the Stop


def test_the_improve_action_writes_its_run_card_beside_the_run_and_the_card_replays(tmp_path):
    """The tab's, API's and CLI's action: the run's files and one run card in the run folder; the card keeps
    the request (the folder is the output), the run still continues, and a replay runs the same request."""
    import dataclasses

    from backends.common.action import replay
    from backends.games.actions import IMPROVE

    action = dataclasses.replace(IMPROVE, load=lambda request: ScriptedLLM())  # the LLM double, a fresh one each run
    request = service.place(_gops(seed=3), None, lambda: tmp_path / "run")
    assert request.run_dir == tmp_path / "run"
    result = list(action.run_here(request))[-1]
    paths = action.write_run(request, result, request.run_dir)
    card = json.loads(paths["run"].read_text())
    assert card["action"] == "games_improve" and card["capability"] == "games"
    assert card["request"]["run_dir"] == {"$output": True} and card["request"]["kind"] == "gops"
    assert card["result"]["iterations_logged"] == [0, 1] and card["result"]["best"] == result.view.rows[0][0]
    assert {"library", "ideas", "log", "strategist"} <= set(card["files"])
    assert service.continues(request.run_dir, _gops()) and service.run_view(request.run_dir).files[-1].endswith("run.json")

    *_, (again, _) = replay(paths["run"], tmp_path / "again", {"games_improve": action}.__getitem__)
    assert again.view.rows == result.view.rows  # the same strategies, ideas and self-play scores
    assert json.loads((tmp_path / "again" / "run.json").read_text())["request"] == card["request"]

    # a run's download (library, ideas, log and its card, without strategist.json) loads and goes on
    files = [tmp_path / "run" / n for n in ("library.json", "ideas.json", "log.jsonl", "run.json")]
    loaded = service.load_run(files, tmp_path / "loaded")
    assert loaded.kind == "gops" and loaded.view.ids == result.view.ids
    assert json.loads((tmp_path / "loaded" / "strategist.json").read_text())["game"] == "gops"
