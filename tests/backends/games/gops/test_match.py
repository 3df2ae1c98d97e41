import json

import pytest

from backends.common.errors import InputError
from backends.games.gops.game import GopsState
from backends.games.gops.match import (
    MATCHES,
    GopsMatch,
    GopsMatchRequest,
    new_match,
    offered_log,
    play,
    play_card,
    player_view,
    reload,
    resign,
    resign_match,
    start,
)


@pytest.mark.parametrize("opponent", ["mcts", "mcts-learning"])
def test_a_person_plays_a_whole_game_against_mcts(opponent):
    m = new_match(GopsMatchRequest(num_cards=5, opponent=opponent, simulations=50, seed=1))
    while not m.over:
        m = play_card(m, m.state.hand(0)[0])
    assert m.state.is_terminal and m.result and len(m.search) == 5
    assert all("visits" in s and s["simulations"] == 50 for s in m.search)


@pytest.mark.parametrize("opponent", ["mcts", "mcts-learning"])
def test_the_agent_bid_does_not_depend_on_the_persons_card(opponent):
    start = new_match(GopsMatchRequest(num_cards=6, opponent=opponent, simulations=80, seed=3))
    start = play_card(play_card(start, 6), 1)  # two revealed bids for the learning agent to model
    bids = {play_card(start, c).state.bids[-1][1] for c in start.state.hand(0)}
    assert len(bids) == 1


def test_illegal_moves_resign_and_round_trip():
    m = new_match(GopsMatchRequest(num_cards=4, opponent="greedy", seed=0))
    m = play_card(m, 2)
    with pytest.raises(InputError, match="do not hold card 2"):
        play_card(m, 2)
    again = GopsMatch.from_json(m.to_json())
    assert again.state == m.state and again.search == m.search
    done = resign(m)
    assert done.over and "resigned" in done.result
    with pytest.raises(InputError, match="over"):
        play_card(done, 1)
    with pytest.raises(InputError, match="Opponent must be one of"):
        new_match(GopsMatchRequest(opponent="oracle"))


MARGIN_SOURCE = '''
def evaluate_state(state):
    """Scores so far plus the remaining prizes split by each side's share of the card total."""
    left = sum(state["prizes_left"]) + (state["prize"] or 0) + state["pot"]
    mine = sum(state["p0_hand"])
    theirs = sum(state["p1_hand"])
    share = mine / (mine + theirs) if mine + theirs else 0.5
    return (state["p0_score"] + left * share, state["p1_score"] + left * (1 - share)), {"share": share}
'''


def test_the_strategist_opponent_plays_its_strategy_in_the_sandbox():
    req = GopsMatchRequest(num_cards=5, opponent="strategist", simulations=40, seed=2, strategy_source=MARGIN_SOURCE,
                           strategy_name="s001: llm-idea by a test double")
    m = new_match(req)
    while not m.over:
        m = play_card(m, m.state.hand(0)[0])
    assert m.state.is_terminal and all(s["simulations"] == 40 for s in m.search)
    assert GopsMatch.from_json(m.to_json()).request.strategy_source == MARGIN_SOURCE  # the log carries it


def test_the_strategist_opponent_refuses_bad_code_and_needs_a_strategy():
    with pytest.raises(InputError, match="refused"):
        new_match(GopsMatchRequest(opponent="strategist", strategy_source="import os\ndef evaluate_state(s):\n  return 1"))
    with pytest.raises(InputError, match="needs a strategy"):
        GopsMatchRequest(opponent="strategist").validate()
    shipped = new_match(GopsMatchRequest(5, opponent="strategist"))  # none given: the shipped run's best
    assert shipped.request.strategy_source and shipped.request.strategy_name.startswith("s0")


def _with_deck(prizes, bids):
    from backends.games.gops.game import GopsConfig, GopsState

    state = GopsState.new(GopsConfig(5, "discard", "random"), seed=7, prizes=prizes)
    for b in bids:
        state = state.apply({0: b[0], 1: b[1]})
    return GopsMatch(GopsMatchRequest(num_cards=5, opponent="greedy", seed=7), state)


def test_the_players_view_does_not_depend_on_the_prizes_still_hidden():
    bids = [(1, 3), (5, 2)]
    a = _with_deck((3, 1, 4, 5, 2), bids)
    b = _with_deck((3, 1, 4, 2, 5), bids)  # the same game so far; only the unrevealed order differs
    assert player_view(a) == player_view(b)
    assert player_view(a)["prizes_revealed"] == [3, 1, 4]  # two played, one on the table
    name, text = offered_log(a, "id-a")
    assert name == "gops_your_view.json" and "seed" not in text and '"prizes"' not in text
    assert text == offered_log(b, "id-a")[1]


def test_every_new_game_deals_afresh_unless_a_seed_is_given():
    matches = [new_match(GopsMatchRequest(num_cards=13, opponent="random")) for _ in range(6)]
    assert len({m.request.seed for m in matches}) == 6
    assert len({m.state.prizes for m in matches}) > 1
    fixed = [new_match(GopsMatchRequest(num_cards=13, opponent="random", seed=5)) for _ in range(2)]
    assert fixed[0].state.prizes == fixed[1].state.prizes and fixed[0].request.seed == 5


def test_held_matches_play_and_their_full_log_reloads_the_finished_game_exactly():
    match_id, m = start(GopsMatchRequest(num_cards=4, opponent="mcts", simulations=30))
    name, view = offered_log(m, match_id)
    assert name == "gops_your_view.json"
    assert reload(view)[0] == match_id  # the player's view resumes the game held here
    while not m.over:
        m = play(match_id, m.state.hand(0)[-1])
    name, full = offered_log(m, match_id)
    data = json.loads(full)
    assert name == "gops_game.json" and data["request"]["seed"] == m.request.seed
    assert data["game"]["prizes"] == list(m.state.prizes)
    new_id, again = reload(full)
    assert new_id != match_id and again.state == m.state and again.search == m.search and again.over
    with pytest.raises(InputError, match="over"):
        play(new_id, 1)
    unfinished = GopsMatch(m.request, GopsState.from_log(json.dumps({**data["game"], "bids": data["game"]["bids"][:2]})))
    with pytest.raises(InputError, match="game in progress"):
        reload(unfinished.to_json())
    resumed_id, _ = start(GopsMatchRequest(num_cards=4, opponent="greedy", seed=1))
    assert resign_match(resumed_id).over and "resigned" in MATCHES.get(resumed_id).result


def test_a_log_of_the_wrong_shape_says_what_a_gops_log_is():
    from backends.games.gops.match import GopsMatch, reload

    for text, words in (("[1, 2]", "a GOPS log is a JSON object with 'request' and 'game'"),
                        ('"x"', "a JSON object"), ('{"a": null}', "a JSON object"),
                        ('{"request": {}}', "it has no 'game' entry")):
        with pytest.raises(InputError, match=words) as e:
            GopsMatch.from_json(text)
        assert "indices" not in str(e.value)
    with pytest.raises(InputError, match="That file is not a GOPS log"):
        reload("{")
