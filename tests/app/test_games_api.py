"""The Strategy Games tab through gradio_client (which carries the session's game state for us)."""

import json
from pathlib import Path

import pytest
from gradio_client import Client

from tests.app.scripted_llm import scripted_strategist


@pytest.fixture
def session(live_app):
    """A fresh client: its own session, so its own game."""
    c = Client(live_app[1], verbose=False)
    yield c
    c.close()


def test_new_game_play_and_resign_through_the_api(session):
    board, *_ = session.predict(5, "discard", "descending", "greedy", 100, 0, api_name="/gops_new")
    assert "Prize: **5**" in board
    board, history, stats, log, *_ = session.predict("5", api_name="/gops_play")
    assert history["data"][0][:4] == [1, 5, 5, 5]  # greedy bid the prize: a tie, discarded
    assert stats["chosen"] == 5 and "Prize: **4**" in board
    game = json.loads(Path(log).read_text())
    assert game["game"]["bids"] == [[5, 5]]
    board, *_ = session.predict(api_name="/gops_resign")
    assert "resigned" in board


def test_play_against_the_shipped_strategist_strategy(session):
    """Without an Improve run in this session, the strategist opponent is the shipped run's best strategy."""
    board, *_ = session.predict(5, "discard", "descending", "strategist", 200, 0, api_name="/gops_new")
    assert "strategist, strategy s0" in board and ("hand-written" in board or " by " in board)
    board, history, stats, *_ = session.predict("5", api_name="/gops_play")
    assert stats["simulations"] == 200 and history["data"][0][2] == 5


def test_load_a_saved_library_and_play_its_best_strategy(session, tmp_path):
    from gradio_client import handle_file

    from backends.games.gops_heuristics import BASELINE_SOURCE

    better = BASELINE_SOURCE.replace('"expected_p0": v0', '"expected_p0": v0, "loaded": 1')
    lib = [{"id": "s000", "source": BASELINE_SOURCE, "origin": {"kind": "hand-written"}, "score": 0.4},
           {"id": "s001", "source": better, "origin": {"kind": "llm-idea", "llm": "a recorded model", "idea": "x",
                                                      "parent": "s000"}, "score": 0.6, "generation": 1}]
    path = tmp_path / "library.json"
    path.write_text(json.dumps(lib))
    out = session.predict([handle_file(str(path))], api_name="/strategist_load")
    assert "Loaded 2 strategies" in out[0] and "s001: llm-idea by a recorded model" in out[0]
    board, *_ = session.predict(5, "discard", "descending", "strategist", 100, 0, api_name="/gops_new")
    assert "strategy s001: llm-idea by a recorded model" in board
    board, history, stats, *_ = session.predict("5", api_name="/gops_play")
    assert stats["simulations"] == 100  # the loaded strategy searched, in its sandbox


def test_playing_a_card_you_do_not_hold_is_a_clear_error(session):
    session.predict(4, "discard", "random", "random", 100, 1, api_name="/gops_new")
    session.predict("3", api_name="/gops_play")
    with pytest.raises(Exception, match="do not hold card 3"):
        session.predict("3", api_name="/gops_play")


def test_playing_before_a_game_exists_says_so(session):
    with pytest.raises(Exception, match="Start a new game first"):
        session.predict("1", api_name="/gops_play")


def test_avalon_new_game_and_out_of_turn_action(session):
    out = session.predict(5, "Servant", False, 3, "search", api_name="/avalon_new")
    chat, status, info = out[0], out[1], out[2]
    assert "Loyal Servant" in info and any("You are Player" in str(m) for m in chat)
    if "Vote" in status:
        with pytest.raises(Exception, match="Now you should vote"):
            session.predict(api_name="/avalon_success")
    else:
        with pytest.raises(Exception, match="Now you should|not your turn"):
            session.predict(api_name="/avalon_approve")


def test_improve_without_an_llm_says_how_to_configure_one(session, monkeypatch):
    from backends.common import settings as settings_mod

    monkeypatch.setenv("ICLR25_LLM_LOCAL", "none")  # neither an endpoint nor the embedded model
    settings_mod.reset_settings()
    with pytest.raises(Exception, match="ICLR25_LLM_BASE_URL"):
        session.predict("gops", "good", "strategist", 1, 4, 2, 8, 0, api_name="/strategist_run")


@pytest.mark.parametrize("game", ["gops", "avalon-heuristic"])
def test_improve_runs_against_an_openai_compatible_endpoint(session, monkeypatch, scripted_endpoint, game):
    """A scripted chat-completions server on loopback stands in for the LLM (a test double)."""
    from backends.common.settings import reset_settings

    monkeypatch.setenv("ICLR25_LLM_BASE_URL", scripted_endpoint(scripted_strategist))
    monkeypatch.setenv("ICLR25_LLM_MODEL", "scripted-double")
    reset_settings()
    status, curve, table, pick, files = session.predict(game, "good", "strategist", 1, 4, 2, 4, 0,
                                                        api_name="/strategist_run")
    assert "Iteration 1" in status and "scripted-double" in status
    origins = {row[1].split(" ")[0] for row in table["data"]}
    assert {"hand-written", "llm-seed", "llm-idea"} <= origins
    assert any(Path(f).name == "log.jsonl" for f in files)


def test_a_loaded_avalon_run_plays_in_avalon_and_gops_keeps_its_own_strategist(session):
    from gradio_client import handle_file

    from backends.common.settings import get_settings

    run = get_settings().assets_dir / "games-strategist" / "avalon-strategist"
    files = [handle_file(str(run / n)) for n in ("library.json", "ideas.json", "log.jsonl", "run.json")]
    out = session.predict(files, api_name="/strategist_load")
    assert "best **s000: hand-written**" in out[0] and out[5] == "avalon-heuristic"
    chat, status, info, *_ = session.predict(5, "Servant", False, 2, "strategist", api_name="/avalon_new")
    assert "agents' strategy: s000: hand-written" in info
    board, *_ = session.predict(5, "discard", "descending", "strategist", 100, 0, api_name="/gops_new")
    assert "strategy s000: hand-written" in board  # the shipped GOPS run: the loaded run is Avalon's


def test_strategist_agents_speak_through_the_endpoint_by_the_strategys_guides(session, monkeypatch, scripted_endpoint):
    from backends.common.settings import reset_settings
    from backends.games.avalon_dialogue import DEFAULT_GUIDES

    systems = []

    def speech(body):
        systems.append(body["messages"][0]["content"])
        return "I suspect player 2. Keep player 2 off the team."

    monkeypatch.setenv("ICLR25_LLM_BASE_URL", scripted_endpoint(speech))
    monkeypatch.setenv("ICLR25_LLM_MODEL", "scripted-double")
    reset_settings()
    session.predict(api_name="/strategist_new")  # no run of ours: the shipped Avalon strategy plays
    chat, status, info, *_ = session.predict(5, "Servant", True, 11, "strategist+llm", api_name="/avalon_new")
    assert "agents' strategy: s000" in info
    if not systems:  # the person may speak first: say something, then the agents speak
        chat, status, info, *_ = session.predict("I am loyal.", api_name="/avalon_say")
    assert systems and all(any(g in s for g in DEFAULT_GUIDES.values()) for s in systems)
    assert "I suspect player 2" in json.dumps(chat)
