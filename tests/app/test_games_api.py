"""The Strategy Games tab through gradio_client (which carries the session's game state for us)."""

import json
from pathlib import Path

import pytest
from gradio_client import Client


@pytest.fixture
def session(live_app):
    """A fresh client: its own session, so its own game."""
    c = Client(live_app[1], verbose=False)
    yield c
    c.close()


def test_new_game_play_and_resign_through_the_api(session):
    board, *_ = session.predict(5, "discard", "descending", "greedy", 10, 0, api_name="/gops_new")
    assert "Prize: **5**" in board
    board, history, stats, log, *_ = session.predict("5", api_name="/gops_play")
    assert history["data"][0][:4] == [1, 5, 5, 5]  # greedy bid the prize: a tie, discarded
    assert stats["chosen"] == 5 and "Prize: **4**" in board
    game = json.loads(Path(log).read_text())
    assert game["game"]["bids"] == [[5, 5]]
    board, *_ = session.predict(api_name="/gops_resign")
    assert "resigned" in board


def test_playing_a_card_you_do_not_hold_is_a_clear_error(session):
    session.predict(4, "discard", "random", "random", 10, 1, api_name="/gops_new")
    session.predict("3", api_name="/gops_play")
    with pytest.raises(Exception, match="do not hold card 3"):
        session.predict("3", api_name="/gops_play")


def test_playing_before_a_game_exists_says_so(session):
    with pytest.raises(Exception, match="Start a new game first"):
        session.predict("1", api_name="/gops_play")


def test_avalon_new_game_and_out_of_turn_action(session):
    out = session.predict(5, "Servant", False, 3, api_name="/avalon_new")
    chat, status, info = out[0], out[1], out[2]
    assert "Loyal Servant" in info and any("You are Player" in str(m) for m in chat)
    if "Vote" in status:
        with pytest.raises(Exception, match="Now you should vote"):
            session.predict(api_name="/avalon_success")
    else:
        with pytest.raises(Exception, match="Now you should|not your turn"):
            session.predict(api_name="/avalon_approve")
