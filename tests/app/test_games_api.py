"""The Strategy Games tab through gradio_client (which carries the session's game state for us)."""

import json
import time
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
    board, history, stats, log, *_ = session.predict(5, api_name="/gops_play")
    assert history["data"][0][:4] == [1, 5, 5, 5]  # greedy bid the prize: a tie, discarded
    assert stats["chosen"] == 5 and "Prize: **4**" in board
    game = json.loads(Path(log).read_text())
    assert Path(log).name == "gops_your_view.json" and game["bids"] == [[5, 5]] and "seed" not in game
    board, history, stats, log, *_ = session.predict(api_name="/gops_resign")
    assert "resigned" in board and "Seed **0**" in board  # the seed is told once the game is over
    assert Path(log).name == "gops_game.json" and json.loads(Path(log).read_text())["request"]["seed"] == 0


def test_play_against_the_shipped_strategist_strategy(session):
    """Without an Improve run in this session, the strategist opponent is the shipped run's best strategy."""
    board, *_ = session.predict(5, "discard", "descending", "strategist", 200, 0, api_name="/gops_new")
    assert "strategist, strategy s0" in board and ("hand-written" in board or " by " in board)
    board, history, stats, *_ = session.predict(5, api_name="/gops_play")
    assert stats["simulations"] == 200 and history["data"][0][2] == 5


def test_load_a_saved_library_and_play_its_best_strategy(session, tmp_path):
    from gradio_client import handle_file

    from backends.games.gops.heuristics import BASELINE_SOURCE

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
    board, history, stats, *_ = session.predict(5, api_name="/gops_play")
    assert stats["simulations"] == 100  # the loaded strategy searched, in its sandbox


def test_playing_a_card_you_do_not_hold_is_a_clear_error(session):
    session.predict(4, "discard", "random", "random", 100, 1, api_name="/gops_new")
    session.predict(3, api_name="/gops_play")
    with pytest.raises(Exception, match="do not hold card 3"):
        session.predict(3, api_name="/gops_play")


def test_playing_before_a_game_exists_says_so(session):
    with pytest.raises(Exception, match="Start a new game first"):
        session.predict(1, api_name="/gops_play")


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


def test_a_downloaded_improve_run_card_replays_through_the_cli(session, monkeypatch, scripted_endpoint, tmp_path):
    """Download the run's files from the tab, rerun with `iclr25-studio replay run.json`: the same library."""
    import os
    import shutil
    import subprocess
    import sys

    from backends.common.settings import reset_settings

    monkeypatch.setenv("ICLR25_LLM_BASE_URL", scripted_endpoint(scripted_strategist))
    monkeypatch.setenv("ICLR25_LLM_MODEL", "scripted-double")
    reset_settings()
    status, curve, table, pick, files = session.predict("gops", "good", "strategist", 1, 4, 2, 4, 5,
                                                        api_name="/strategist_run")
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    for f in files:  # a person saves the downloads into one folder
        shutil.copy(f, downloads / Path(f).name)
    assert {"library.json", "ideas.json", "log.jsonl", "strategist.json", "run.json"} <= {
        p.name for p in downloads.iterdir()}
    card = json.loads((downloads / "run.json").read_text())
    assert card["action"] == "games_improve" and card["request"]["seed"] == 5 and card["request"]["iterations"] == 1
    assert card["request"]["run_dir"] == {"$output": True} and card["result"]["best"] == table["data"][0][0]
    out = tmp_path / "again"
    res = subprocess.run([sys.executable, "-m", "app", "replay", str(downloads / "run.json"), "--out", str(out)],
                         capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert res.returncode == 0, res.stderr
    assert json.loads((out / "library.json").read_text()) == json.loads((downloads / "library.json").read_text())
    assert json.loads((out / "run.json").read_text())["result"] == card["result"]


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
    from backends.games.avalon.dialogue import DEFAULT_GUIDES

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


# --- hidden means hidden: what a player may see through the API while a game runs ---------------------

def _public(outputs) -> list:
    """An endpoint's outputs as the client got them, with each offered file replaced by its text."""
    out = []
    for value in outputs:
        if isinstance(value, str) and Path(value).is_file():
            out.append({"file": Path(value).name, "text": Path(value).read_text(), "path": value})
        else:
            out.append(value)
    return out


def _without_resume_id(outputs: list) -> str:
    """The outputs as text, leaving out what differs between two sessions by design: the match's id
    and where the client saved the file."""
    return json.dumps([o if not isinstance(o, dict) or "file" not in o else
                       {"file": o["file"], "text": {k: v for k, v in json.loads(o["text"]).items() if k != "resume"}}
                       for o in outputs])


def _seeds_sharing_the_first_prizes(n: int = 6, shown: int = 3) -> tuple[int, int]:
    """Two seeds whose prize decks agree on the first ``shown`` prizes and differ after them."""
    from backends.games.gops.game import GopsConfig

    first: dict[tuple, tuple[int, tuple]] = {}
    for seed in range(10_000):
        deck = GopsConfig(n).prize_deck(seed)
        other = first.setdefault(deck[:shown], (seed, deck))
        if other[1][shown:] != deck[shown:]:
            return other[0], seed
    raise AssertionError("no two such seeds")


def test_gops_outputs_and_files_do_not_depend_on_the_prizes_still_hidden(live_app):
    """Two games whose decks agree on the revealed prizes and differ after them: every output of the
    first two rounds is the same, file included — so none of them carries the unrevealed order."""
    seeds = _seeds_sharing_the_first_prizes()
    seen = []
    for seed in seeds:
        c = Client(live_app[1], verbose=False)
        moves = [_public(c.predict(6, "discard", "random", "greedy", 100, seed, api_name="/gops_new"))]
        for card in (6, 1):
            moves.append(_public(c.predict(card, api_name="/gops_play")))
        c.close()
        view = next(o for o in moves[-1] if isinstance(o, dict) and "file" in o)
        assert view["file"] == "gops_your_view.json"
        data = json.loads(view["text"])
        assert len(data["prizes_revealed"]) == 3 and data["game"] == "gops"
        assert not {"seed", "prizes", "request", "state"} & set(data)
        seen.append(_without_resume_id([o for m in moves for o in m]))
    assert seen[0] == seen[1]


def test_gops_full_log_after_the_game_reloads_it_and_a_view_log_resumes_it(live_app, session):
    from gradio_client import handle_file

    session.predict(4, "discard", "random", "greedy", 100, -1, api_name="/gops_new")
    board, history, stats, view_log, *_ = session.predict(1, api_name="/gops_play")
    other = Client(live_app[1], verbose=False)  # another session (a reloaded page) resumes from the view's log
    resumed = other.predict(handle_file(view_log), api_name="/gops_reload")
    assert resumed[0] == board and resumed[1] == history
    other.predict(2, api_name="/gops_play")
    other.close()
    board, *_ = session.predict(3, api_name="/gops_play")  # the same game, held on the server
    assert "round 4/4" in board
    board, history, stats, full_log, *_ = session.predict(4, api_name="/gops_play")
    full = json.loads(Path(full_log).read_text())
    assert Path(full_log).name == "gops_game.json" and len(full["game"]["prizes"]) == 4
    assert f"Seed **{full['request']['seed']}**" in board
    again = session.predict(handle_file(full_log), api_name="/gops_reload")
    assert again[0] == board and again[1] == history and again[2] == stats  # the finished game, exactly
    unfinished = {**full, "game": {**full["game"], "bids": full["game"]["bids"][:2]}}
    path = Path(full_log).with_name("unfinished.json")
    path.write_text(json.dumps(unfinished))
    with pytest.raises(Exception, match="game in progress"):
        session.predict(handle_file(str(path)), api_name="/gops_reload")


def test_every_new_game_deals_afresh(session):
    seeds = set()
    for _ in range(3):
        session.predict(13, "discard", "random", "random", 100, -1, api_name="/gops_new")
        board, *_ = session.predict(api_name="/gops_resign")
        seeds.add(board.split("Seed **")[1].split("**")[0])
    assert len(seeds) == 3


HIDDEN_ROLES = ("Merlin", "Assassin", "Minion", "Percival", "Morgana", "Mordred", "Oberon")


def _avalon_move(session, status: str, said: int):
    if "to speak" in status:
        return session.predict(f"I am loyal ({said}).", api_name="/avalon_say")
    if "pick a team" in status:
        size = int(status.split("Team size ")[1].split(".")[0])
        return session.predict([str(i) for i in range(size)], api_name="/avalon_propose")
    if "Vote on" in status:
        return session.predict(api_name="/avalon_approve")
    if "play a card" in status:
        return session.predict(api_name="/avalon_success")
    raise AssertionError(f"no move for {status!r}")


def _leaks_mid_game(outputs: list, me: int) -> list[str]:
    """What a Loyal Servant may not know, found in the outputs of a game in progress."""
    found = [] if any(isinstance(o, dict) and "file" in o for o in outputs) else ["no log offered to check"]
    for o in outputs:
        if isinstance(o, dict) and "file" in o:
            assert o["file"] == "avalon_your_view.json", o["file"]
            data = json.loads(o["text"])
            found += [f"file key {k}" for k in ("seed", "log", "reasoning", "roles", "strategy_source") if k in data]
            for e in data["events"]:
                if e["type"] == "role" and e["player"] != me or e["type"] == "quest_card" and e["player"] != me:
                    found.append(f"event {e}")
                if e["type"] == "game_end":
                    found.append("the end of the game")
                e = {k: v for k, v in e.items() if k != "roles_in_game"}  # the public list of roles in play
                found += [f"{r} in {e}" for r in HIDDEN_ROLES if r in json.dumps(e)]
        else:
            text = json.dumps(o).replace("roles in play: Assassin, Merlin, Minion, Servant, Servant", "")
            found += [f"{r} in {text[:300]}" for r in HIDDEN_ROLES if r in text]
            found += [w for w in ("private reasoning", "sampled worlds", "P(Merlin)", "Seed") if w in text]
    return found


def test_avalon_as_a_loyal_servant_sees_only_their_information_set(live_app, session):
    """Every output and offered file of a whole game, checked move by move: no other seat's role, no
    seat's quest card, no reasoning, no seed until the game is over; then the full log, which reloads
    the game exactly. Midway, another session (a reloaded page) resumes the game from the view's log."""
    from gradio_client import handle_file

    outputs = _public(session.predict(5, "Servant", True, 5, "search", api_name="/avalon_new"))
    me = int(outputs[2].split("**Player ")[1].split("**")[0])
    moves = 0
    while "Game over" not in outputs[1]:
        assert not _leaks_mid_game(outputs, me), _leaks_mid_game(outputs, me)
        if moves == 3:
            view = next(o for o in outputs if isinstance(o, dict) and "file" in o)
            other = Client(live_app[1], verbose=False)
            resumed = _public(other.predict(handle_file(view["path"]), api_name="/avalon_reload"))
            other.close()
            assert resumed[:3] == outputs[:3]  # the same chat, status and info line
        outputs = _public(_avalon_move(session, outputs[1], moves))
        moves += 1
        assert moves < 80
    assert moves >= 5
    full = next(o for o in outputs if isinstance(o, dict) and "file" in o)
    assert full["file"] == "avalon_game.json"
    data = json.loads(full["text"])
    roles = json.loads(data["log"].splitlines()[0])["roles"]
    assert roles[me] == "Servant" and data["reasoning"] and f"Seed **{data['seed']}**" in outputs[1]
    assert "private reasoning" in json.dumps(outputs[0])  # now the agents' reasoning is in the chat
    again = _public(session.predict(handle_file(full["path"]), api_name="/avalon_reload"))
    assert again[:3] == outputs[:3]  # the finished game, exactly


def test_avalon_logs_that_cannot_be_trusted_are_refused(session, tmp_path):
    from gradio_client import handle_file

    session.predict(5, "Servant", False, -1, "rule", api_name="/avalon_new")
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({"game": "avalon", "resume": "not-a-real-game", "events": []}))
    with pytest.raises(Exception, match="no longer on the server"):
        session.predict(handle_file(str(forged)), api_name="/avalon_reload")
    from backends.games.avalon.match import AvalonMatchRequest, new_match

    written = tmp_path / "written.json"  # a full log of a game in progress, written by hand
    written.write_text(new_match(AvalonMatchRequest(5, "Servant", False, 1, "rule")).to_json())
    with pytest.raises(Exception, match="game in progress"):
        session.predict(handle_file(str(written)), api_name="/avalon_reload")


def test_agents_that_recite_their_prompt_are_silenced(session, monkeypatch, scripted_endpoint):
    """An LLM double that answers with the agent's prompt ("You are player 1 of 5, role Minion (evil).
    You see: ..."): none of it reaches the chat."""
    from backends.common.settings import reset_settings
    from backends.games.avalon.dialogue import NEUTRAL_LINE

    monkeypatch.setenv("ICLR25_LLM_BASE_URL", scripted_endpoint(lambda body: body["messages"][1]["content"]))
    monkeypatch.setenv("ICLR25_LLM_MODEL", "echo-double")
    reset_settings()
    outputs = _public(session.predict(5, "Servant", True, 7, "search+llm", api_name="/avalon_new"))
    me = int(outputs[2].split("**Player ")[1].split("**")[0])
    for moves in range(3):
        assert not _leaks_mid_game(outputs, me), _leaks_mid_game(outputs, me)
        outputs = _public(_avalon_move(session, outputs[1], moves))
    texts = [part["text"] for m in outputs[0] for part in m["content"]]
    speeches = [t.split(":** ", 1)[1] for t in texts if t.startswith("**Player ") and "(you)" not in t]
    assert len(speeches) >= 4 and set(speeches) == {NEUTRAL_LINE}


def test_improve_reports_each_game_stops_and_leaves_the_gpu_queue_free(session, monkeypatch,
                                                                                scripted_endpoint, tmp_path):
    """Improve is a job of its own (not on the shared "gpu" queue): a heavy action of another tab runs while
    it does; its progress names each evaluation game; Stop ends it inside the evaluation."""

    from gradio_client import Client

    from backends.common.settings import reset_settings
    from tests.app.test_counterfactual_api import BRIDGE, CLASSIFIER, EXAMPLES, editor_payload

    def slow(body):
        time.sleep(0.3)
        return scripted_strategist(body)

    monkeypatch.setenv("ICLR25_LLM_BASE_URL", scripted_endpoint(slow))
    monkeypatch.setenv("ICLR25_LLM_MODEL", "scripted-double")
    reset_settings()
    job = session.submit("gops", "good", "strategist", 5, 6, 40, 200, 0, api_name="/strategist_run")
    progress = ""
    while "evaluation: game" not in progress:  # pytest-timeout guards a run that never gets there
        time.sleep(0.3)
        units = job.status().progress_data or []
        progress = " ".join(str(u.desc) for u in units)
    assert "seeding: evaluation: game" in progress and not job.done()

    other = Client(session.src, verbose=False)  # another user, another tab, the shared heavy-work queue
    payload, _ = editor_payload(tmp_path, EXAMPLES / "cone.png", None)
    heavy = other.submit(payload, "sphere", 1, 8, 1.5, 0.6, 0, BRIDGE, CLASSIFIER, api_name="/counterfactual_generate")
    with pytest.raises(Exception, match="Paint the region"):  # its answer, not a timeout behind the Improve run
        heavy.result(timeout=30)
    other.close()
    assert not job.done()

    assert "Stopping" in session.predict(api_name="/strategist_stop")
    status, *_ = job.result()  # stopped inside the evaluation (40 games per pair, 5 iterations were to come)
    assert status.startswith("Stopped after iteration 0")


def test_a_card_that_is_not_a_whole_card_number_is_a_clear_error_and_the_game_goes_on(session):
    session.predict(4, "discard", "descending", "greedy", 100, 0, api_name="/gops_new")
    for bad, words in ((1.5, "A card is a whole number from your hand"), (0, "less than minimum value 1"),
                       (14, "greater than maximum value 13"), (5, "do not hold card 5")):
        with pytest.raises(Exception, match=words) as e:
            session.predict(bad, api_name="/gops_play")
        assert "failed unexpectedly" not in str(e.value)
    board, history, *_ = session.predict(2, api_name="/gops_play")
    assert history["data"][0][:4] == [1, 4, 2, 4] and "round 2/4" in board


def _listed(client, endpoint: str) -> list[str]:
    api = client.view_api(return_format="dict", print_info=False)
    return [p["parameter_name"] for p in api["named_endpoints"][endpoint]["parameters"]]


def test_gops_play_takes_exactly_the_parameters_it_lists(session):
    """The reproduced bug: /gops_play listed no parameters but needed the card ("An event handler (on_card)
    didn't receive enough input values"). Called with exactly what view_api lists, by name, it plays the card."""
    listed = _listed(session, "/gops_new")
    assert listed == ["num_cards", "tie_rule", "prize_order", "opponent", "simulations", "seed"]
    named = dict(zip(listed, (4, "discard", "descending", "greedy", 100, 0), strict=True))
    board, *_ = session.predict(api_name="/gops_new", **named)
    assert "Prize: **4**" in board
    listed = _listed(session, "/gops_play")
    assert listed == ["card"]
    board, history, stats, log, status = session.predict(api_name="/gops_play", **{listed[0]: 3})
    assert history["data"][0][:4] == [1, 4, 3, 4] and "round 2/4" in board and stats["chosen"] == 4
    assert status == "You bid 3, the agent 4: the agent wins the prize 4." and Path(log).is_file()


def test_an_avalon_action_called_by_its_listed_names(session):
    listed = _listed(session, "/avalon_new")
    assert listed == ["num_players", "human_role", "discussion", "seed", "agents"]
    values = {"num_players": 5, "human_role": "Servant", "discussion": True, "seed": 3, "agents": "rule"}
    chat, status, info, *_ = session.predict(api_name="/avalon_new", **values)
    assert "Loyal Servant" in info
    for _ in range(20):  # until the person is to speak (the rule agents speak, propose and vote quickly)
        if "to speak" in status:
            break
        chat, status, info, *_ = _avalon_move(session, status, 0)
    assert "to speak" in status and _listed(session, "/avalon_say") == ["text"]
    chat, status, *_ = session.predict(api_name="/avalon_say", text="I trust player 1.")
    assert "I trust player 1." in json.dumps(chat)


def test_stop_ends_the_agents_search_and_the_game_stays_as_it_was(session, tmp_path):
    """A bid against a slow strategy (an LLM-written one searches in its sandbox, ≈50 k simulations a second):
    its search reports progress; Stop ends it at its next batch; the card is not played, the game is as it was,
    and the same bid can be made again."""
    from gradio_client import handle_file

    from backends.games.gops.heuristics import BASELINE_SOURCE

    slow = BASELINE_SOURCE.replace('"expected_p0": v0', '"expected_p0": v0, "sandboxed": 1')  # not the compiled one
    lib = [{"id": "s000", "source": slow, "origin": {"kind": "hand-written"}, "score": 0.5}]
    (tmp_path / "library.json").write_text(json.dumps(lib))
    session.predict([handle_file(str(tmp_path / "library.json"))], api_name="/strategist_load")
    before = session.predict(13, "discard", "descending", "strategist", 200_000, 0, api_name="/gops_new")
    assert "strategy s000" in before[0]
    job = session.submit(13, api_name="/gops_play")
    progress = ""
    while "The agent searches" not in progress:  # pytest-timeout guards a search that never reports
        time.sleep(0.1)
        progress = " ".join(str(u.desc) for u in (job.status().progress_data or []))
        assert not job.done(), job.result()
    assert "of 200,000 simulations" in progress
    assert session.predict(api_name="/gops_stop") == "Stopping…"
    *_, status = job.result()
    assert status.startswith("Stopped: the agent's search was stopped and your card was not played")
    assert session.predict(api_name="/gops_stop") == "Nothing is running."
    board, history, *_ = session.predict(api_name="/gops_resign")  # the game, as it was before the bid
    assert "Prize: **13**" in before[0] and "round 1/13" in board and not history["data"]


@pytest.mark.parametrize("api", ["/gops_reload", "/avalon_reload"])
def test_a_log_that_is_not_text_or_not_json_is_a_clear_error(session, tmp_path, api):
    from gradio_client import handle_file

    png = tmp_path / "picture.json"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe" + bytes(range(256)))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    for path, match in ((png, "not readable text"), (deep, "it is not JSON")):
        with pytest.raises(Exception, match=match) as e:
            session.predict(handle_file(str(path)), api_name=api)
        assert "failed unexpectedly" not in str(e.value)


def test_every_role_the_avalon_tab_offers_can_be_played(session):
    api = session.view_api(return_format="dict", print_info=False)
    offered = next(p for p in api["named_endpoints"]["/avalon_new"]["parameters"] if p["parameter_name"] == "human_role")
    roles = offered["type"]["enum"]
    assert "random" in roles and {"Merlin", "Servant", "Assassin", "Minion"} <= set(roles)
    for role in roles:
        for players in (5, 10):
            info = session.predict(players, role, False, 3, "rule", api_name="/avalon_new")[2]
            assert "You are **Player" in info and (role == "random" or role in info)
