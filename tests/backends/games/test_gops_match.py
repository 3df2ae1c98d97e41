import pytest

from backends.common.errors import InputError
from backends.games.gops_match import GopsMatch, GopsMatchRequest, new_match, play_card, resign


def test_a_person_plays_a_whole_game_against_mcts():
    m = new_match(GopsMatchRequest(num_cards=5, opponent="mcts", simulations=50, seed=1))
    while not m.over:
        m = play_card(m, m.state.hand(0)[0])
    assert m.state.is_terminal and m.result and len(m.search) == 5
    assert all("visits" in s and s["simulations"] == 50 for s in m.search)


def test_the_agent_bid_does_not_depend_on_the_persons_card():
    start = new_match(GopsMatchRequest(num_cards=6, opponent="mcts", simulations=80, seed=3))
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
    with pytest.raises(InputError, match="Unknown opponent"):
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
        new_match(GopsMatchRequest(opponent="strategist"))
