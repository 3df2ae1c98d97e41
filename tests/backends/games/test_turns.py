"""The agents' turns as actions (``games_gops_play``, ``games_avalon_new``, ``games_avalon_play``): progress per
search batch / agent / world, a Stop that ends the work at its next step and leaves the game as it was, and a
typed result that is the person's view only."""

import dataclasses
import json

import pytest

from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken, ProgressEvent
from backends.games.actions import AVALON_NEW, AVALON_PLAY, GOPS_PLAY
from backends.games.avalon import match as avalon
from backends.games.gops import match as gops
from backends.games.requests import AvalonMatchRequest, AvalonPlayRequest, GopsMatchRequest, GopsPlayRequest

HIDDEN_ROLES = ("Merlin", "Assassin", "Minion")


def _run(action, request, cancel=None, stop_at=None):
    """The action's events and its result; with ``stop_at``, ``cancel`` is set when that event arrives."""
    events, result = [], None
    for item in action.run_here(request, cancel):
        if isinstance(item, ProgressEvent):
            events.append(item)
            if stop_at is not None and len(events) == stop_at:
                cancel.cancel()
        else:
            result = item
    return events, result


def test_a_gops_bid_reports_the_agents_search_and_returns_the_players_view():
    match_id, _ = gops.start(GopsMatchRequest(5, prize_order="descending", opponent="mcts", simulations=6400, seed=1))
    events, turn = _run(GOPS_PLAY, GopsPlayRequest(match_id, 5))
    searching = [e for e in events if e.message.startswith("The agent searches")]
    assert len(searching) >= 10 and searching[-1].message == "The agent searches: 6,400 of 6,400 simulations"
    assert [e.fraction for e in searching] == sorted(e.fraction for e in searching) and searching[-1].fraction == 1
    assert isinstance(turn, gops.GopsTurn) and turn.rounds[0]["you"] == 5 and 5 not in turn.hand
    assert turn.agent_search[-1]["simulations"] == 6400 and turn.seed is None and turn.log_name == "gops_your_view.json"
    with pytest.raises(InputError, match="Card must be a whole number from 1 to 13"):
        _run(GOPS_PLAY, GopsPlayRequest(match_id, 14))


def test_a_stopped_gops_bid_ends_at_the_next_search_batch_and_the_game_is_as_it_was(counted_batches):
    match_id, before = gops.start(GopsMatchRequest(13, opponent="mcts", simulations=200_000, seed=2))
    token = CancelToken()
    counted_batches["cancel_at"](5, token)
    with pytest.raises(Cancelled):
        _run(GOPS_PLAY, GopsPlayRequest(match_id, 13), token)
    assert counted_batches["n"] == 5  # of 3,125 batches: none after the one the Stop came in
    held = gops.MATCHES.get(match_id)
    assert held.state == before.state and held.search == [] and 13 in held.state.hand(0)
    _, turn = _run(GOPS_PLAY, GopsPlayRequest(match_id, 1))  # the game goes on
    assert turn.round == 1


def test_a_gops_turn_holds_nothing_of_the_prizes_still_face_down():
    """Two games whose decks agree on the prizes turned up so far: their turns are the same but for the game's id."""
    from backends.games.gops.game import GopsConfig

    first = {}
    for seed in range(10_000):
        deck = GopsConfig(6).prize_deck(seed)
        other = first.setdefault(deck[:2], seed)
        if GopsConfig(6).prize_deck(other)[2:] != deck[2:]:
            seeds = (other, seed)
            break
    turns = []
    for seed in seeds:
        match_id, _ = gops.start(GopsMatchRequest(6, opponent="greedy", seed=seed))
        _, turn = _run(GOPS_PLAY, GopsPlayRequest(match_id, 6))
        fields = dataclasses.asdict(turn)
        fields["log_text"] = {k: v for k, v in json.loads(fields["log_text"]).items() if k != "resume"}
        turns.append({k: v for k, v in fields.items() if k != "match_id"})
    assert turns[0] == turns[1] and turns[0]["seed"] is None


def test_an_avalon_table_reports_each_agents_action_and_each_world_it_weighs():
    events, turn = _run(AVALON_NEW, AvalonMatchRequest(5, "Servant", False, seed=4, agents="search"))
    assert isinstance(turn, avalon.AvalonTurn) and turn.role == "Servant" and not turn.over
    words = [e.message for e in events]
    assert any("weighing world 1 of 8" in w for w in words) and any("weighing world 8 of 8" in w for w in words)
    assert all(w.startswith(("Dealing", "The table is dealt: Player", "The table is dealt: A quest card")) for w in words)
    assert avalon.MATCHES.get(turn.match_id).human == turn.seat


def test_a_stopped_avalon_turn_leaves_the_game_as_it_was_and_the_agents_then_choose_the_same():
    request = AvalonMatchRequest(5, "Servant", False, seed=6, agents="search")
    _, turn = _run(AVALON_NEW, request)
    while turn.turn != "vote":  # play on to a vote: the agents vote and then act on until the person's turn
        action = {"propose": AvalonPlayRequest(turn.match_id, "propose", team=list(range(turn.team_size))),
                  "quest": AvalonPlayRequest(turn.match_id, "quest", success=True)}[turn.turn]
        _, turn = _run(AVALON_PLAY, action)
    before = avalon.MATCHES.get(turn.match_id).game.to_log()
    vote = AvalonPlayRequest(turn.match_id, "vote", approve=True)
    token = CancelToken()
    with pytest.raises(Cancelled):
        _run(AVALON_PLAY, vote, token, stop_at=3)
    assert avalon.MATCHES.get(turn.match_id).game.to_log() == before  # the vote was taken back too
    _, after = _run(AVALON_PLAY, vote)  # the same vote again: the game goes on from where it was
    assert after.chat[:len(turn.chat)] == turn.chat and len(after.chat) > len(turn.chat)


def test_a_stopped_new_table_deals_no_game():
    request = next(r for r in (AvalonMatchRequest(5, "Merlin", False, seed=s, agents="search") for s in range(40))
                   if len(_run(AVALON_NEW, r)[0]) > 6)  # a deal where the agents act first (for a while)
    held = len(avalon.MATCHES)
    token = CancelToken()
    with pytest.raises(Cancelled):
        _run(AVALON_NEW, request, token, stop_at=2)
    assert len(avalon.MATCHES) == held


def test_an_avalon_turn_is_the_players_information_set_only():
    _, turn = _run(AVALON_NEW, AvalonMatchRequest(5, "Servant", True, seed=9, agents="rule"))
    while not turn.over and turn.quest_results == []:
        action = {"speak": AvalonPlayRequest(turn.match_id, "speak", text="I am loyal."),
                  "propose": AvalonPlayRequest(turn.match_id, "propose", team=list(range(turn.team_size))),
                  "vote": AvalonPlayRequest(turn.match_id, "vote", approve=True),
                  "quest": AvalonPlayRequest(turn.match_id, "quest", success=True)}[turn.turn]
        _, turn = _run(AVALON_PLAY, action)
        text = json.dumps({k: v for k, v in dataclasses.asdict(turn).items() if k != "log_text"})
        for line in turn.chat:  # the setup line names the roles in play, publicly
            if "roles in play" in line["text"]:
                text = text.replace(line["text"].split("roles in play: ")[1].split(".")[0], "")
        log = json.loads(turn.log_text)
        events = [{k: v for k, v in e.items() if k != "roles_in_game"} for e in log.pop("events")]
        text += json.dumps(log) + json.dumps(events)
        assert not [r for r in HIDDEN_ROLES if r in text], text
        assert turn.seed is None and "private reasoning" not in text and "seed" not in log


@pytest.mark.parametrize(("request_", "words"), [
    (AvalonPlayRequest("x", "speak", text="  "), "Type something to say"),
    (AvalonPlayRequest("x", "propose", team=[]), "Tick the players"),
    (AvalonPlayRequest("x", "vote"), "Approve or reject"),
    (AvalonPlayRequest("x", "assassinate"), "whom to name as Merlin"),
    (AvalonPlayRequest("x", "assassinate", target=12), "from 0 to 9"),
    (AvalonPlayRequest("x", "dance"), "Action must be one of"),
])
def test_an_avalon_action_without_what_it_needs_is_refused_before_the_game_is_looked_up(request_, words):
    with pytest.raises(InputError, match=words):
        _run(AVALON_PLAY, request_)
