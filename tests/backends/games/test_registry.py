"""Every registered game under random legal play, in the manner of OpenSpiel's ``random_sim_test``: only
legal moves are made and only current players have them, a terminal state is reached, the returns add up
as the game's ``GameType`` says and stay in its range, and every state round-trips through its log."""

import numpy as np
import pytest

from backends.common.errors import InputError
from backends.games import domains, registry
from backends.games.protocol import random_playthrough


class Checks:
    """Run after every move: who may move, what the returns are so far, and the log round trip."""

    def __init__(self, game: registry.Game):
        self.game = game
        self.moves = 0

    def __call__(self, state) -> None:
        self.moves += 1
        n = state.num_players
        players = state.current_players()
        assert all(0 <= p < n for p in players)
        for p in range(n):
            assert bool(state.legal_actions(p)) == (p in players), f"player {p}, current {players}"
        assert state.is_terminal == (players == [])
        returns = state.returns()
        assert len(returns) == n
        kind = state.game_type
        assert all(kind.min_utility <= r <= kind.max_utility for r in returns)
        if kind.utility == "zero_sum":
            assert sum(returns) == pytest.approx(0.0)
        log = state.to_log()
        again = self.game.state_from_log(log)
        assert again == state and again.to_log() == log and again.returns() == returns


@pytest.mark.parametrize("name", registry.registered_names())
def test_random_play_over_every_game(name):
    game = registry.load_game(name)
    kind = game.game_type
    assert kind.short_name == name and kind.min_utility < kind.max_utility
    rng = np.random.default_rng(0)
    for seed in range(10):
        checks = Checks(game)
        end = random_playthrough(game.new_initial_state(seed), rng, checks)
        assert end.is_terminal and checks.moves > 1
        with pytest.raises(InputError):
            end.apply({})  # nothing moves after the end


def test_load_game_takes_the_game_parameters():
    gops = registry.load_game("gops", num_cards=5, tie_rule="carry")
    state = gops.new_initial_state(seed=3)
    assert state.config.num_cards == 5 and state.config.tie_rule == "carry" and len(state.legal_actions(0)) == 5
    assert registry.load_game("avalon", num_players=7).new_initial_state().num_players == 7
    with pytest.raises(InputError, match="Unknown game"):
        registry.load_game("chess")
    with pytest.raises(InputError, match="Bad parameters"):
        registry.load_game("gops", cards=5)


def test_every_strategist_domain_names_a_registered_game():
    for name in domains.games():
        assert domains.domain_class(name).game == name and name in registry.registered_names()
