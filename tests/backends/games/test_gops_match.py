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
