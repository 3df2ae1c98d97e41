import numpy as np
import pytest

from backends.common.errors import InputError
from backends.games.gops.game import GopsConfig, GopsState


def play_random(state: GopsState, rng) -> GopsState:
    while not state.is_terminal:
        state = state.apply({0: int(rng.choice(state.hand(0))), 1: int(rng.choice(state.hand(1)))})
    return state


def test_higher_bid_wins_the_prize_and_ties_follow_the_rule():
    s = GopsState.new(GopsConfig(3, "discard", "descending"))
    assert s.prize == 3
    s = s.apply({0: 2, 1: 1})
    assert s.scores == (3, 0) and s.prize == 2
    s = s.apply({0: 3, 1: 3})  # tie: discarded
    assert s.scores == (3, 0) and s.pot == 0
    c = GopsState.new(GopsConfig(3, "carry", "descending")).apply({0: 2, 1: 2})  # tie: 3 points carry over
    assert c.pot == 3 and c.apply({0: 3, 1: 1}).scores == (5, 0)


def test_cards_cannot_be_played_twice_or_after_the_end():
    s = GopsState.new(GopsConfig(3), seed=1).apply({0: 1, 1: 2})
    with pytest.raises(InputError, match="cannot bid 1"):
        s.apply({0: 1, 1: 3})
    s = play_random(s, np.random.default_rng(0))
    assert s.is_terminal and s.legal_actions(0) == ()
    with pytest.raises(InputError, match="over"):
        s.apply({0: 1, 1: 1})


def test_observation_never_shows_a_sealed_bid():
    s = GopsState.new(GopsConfig(5), seed=3).apply({0: 4, 1: 2})
    obs = s.observation(1)
    assert obs["opponent_bids"] == [4] and obs["my_bids"] == [2]
    assert obs["prize"] == s.prizes[1] and obs["prizes_seen"] == list(s.prizes[:2])
    assert s.prizes[2] not in obs["prizes_seen"]


def test_json_round_trip_and_tampered_logs():
    s = play_random(GopsState.new(GopsConfig(6, "carry"), seed=9), np.random.default_rng(1))
    again = GopsState.from_log(s.to_log())
    assert again == s and again.returns("total_points") == s.returns("total_points")
    bad = s.to_log().replace('"bids": [[', '"bids": [[99, ')
    with pytest.raises(InputError):
        GopsState.from_log(bad)
    with pytest.raises(InputError, match="Not a GOPS game log"):
        GopsState.from_log("{}")


def test_config_validation():
    with pytest.raises(InputError):
        GopsConfig(2)
    with pytest.raises(InputError):
        GopsConfig(5, tie_rule="split")
    with pytest.raises(InputError, match="each card"):
        GopsState.new(GopsConfig(3), prizes=(1, 1, 2))


def test_same_action_sequences_give_openspiel_goofspiel_returns():
    """The engine against OpenSpiel's goofspiel over thousands of random games (discard rule). open_spiel is a
    test dependency: without it this fails, it never skips."""
    import pyspiel
    rng = np.random.default_rng(0)
    games = {n: pyspiel.load_game("goofspiel", {"num_cards": n, "points_order": "random",
                                                "returns_type": "total_points"}) for n in (3, 4, 6, 13)}
    checked = 0
    for i in range(2000):
        n = (3, 4, 6, 13)[i % 4]
        os_state = games[n].new_initial_state()
        prizes, bids = [], []
        while not os_state.is_terminal():
            if os_state.is_chance_node():
                action = int(rng.choice([a for a, _ in os_state.chance_outcomes()]))
                prizes.append(action + 1)
                os_state.apply_action(action)
            else:
                b = [int(rng.choice(os_state.legal_actions(p))) for p in (0, 1)]
                bids.append((b[0] + 1, b[1] + 1))
                os_state.apply_actions(b)
        # OpenSpiel plays the last round by itself (one prize and one card each left): so do we
        prizes += sorted(set(range(1, n + 1)) - set(prizes))
        ours = GopsState.new(GopsConfig(n, "discard"), prizes=tuple(prizes))
        for b0, b1 in bids:
            ours = ours.apply({0: b0, 1: b1})
        assert ours.round == n - 1
        ours = ours.apply({0: ours.hand(0)[0], 1: ours.hand(1)[0]})
        assert ours.returns("total_points") == pytest.approx(tuple(os_state.returns()))
        checked += 1
    assert checked == 2000
