"""The learned opponent model: what it learns from revealed bids, and that search exploits it."""

import numpy as np

from backends.games.gops import search as gs
from backends.games.gops.agents import MCTSAgent
from backends.games.gops.game import GopsConfig, GopsState
from backends.games.gops.opponent import FEATURES, OpponentModel, probabilities


def _lowest_card_games(model: OpponentModel, games: int, seed: int = 0) -> None:
    """Player 0 always bids its lowest card; player 1 bids at random; the model watches player 0."""
    rng = np.random.default_rng(seed)
    for g in range(games):
        state = GopsState.new(GopsConfig(13), seed=seed + g)
        while not state.is_terminal:
            state = state.apply({0: min(state.hand(0)), 1: int(rng.choice(state.hand(1)))})
            model.observe(state, opponent=0)


def test_compiled_sampler_draws_from_the_models_probabilities():
    w = np.array([0.8, -2.0, -0.5, 0.3, 0.9, -1.0, -0.4])
    hand, prize, left = [2, 3, 5, 8, 11, 13], 9, [1, 4, 12]
    expected = probabilities(w, hand, prize, left, 13)
    hand_mask = sum(1 << (c - 1) for c in hand)
    left_mask = sum(1 << (c - 1) for c in left)
    draws = [gs._model_pick(w, np.int64(hand_mask), 13, prize, np.int64(left_mask)) for _ in range(20000)]
    seen = np.array([draws.count(c) for c in hand]) / len(draws)
    assert np.abs(seen - expected).max() < 0.02, (seen, expected)
    assert len(w) == len(FEATURES)


def test_model_learns_a_habit_and_ignores_bids_it_has_seen():
    model = OpponentModel(13)
    assert model.log_likelihood() == 0.0
    _lowest_card_games(model, 6)
    assert model.observations == 6 * 12  # the last round's single card is no choice
    state = GopsState.new(GopsConfig(13), seed=999).apply({0: 1, 1: 5}).apply({0: 2, 1: 3})
    assert model.observe(state, opponent=0) == 2
    assert model.observe(state, opponent=0) == 0  # the same history again: nothing new
    assert model.observe(state.apply({0: 3, 1: 4}), opponent=0) == 1
    p = probabilities(model.weights, list(range(1, 14)), 13, list(range(1, 13)), 13)
    assert p[0] > 0.8, p  # even for the top prize it expects the lowest card
    assert model.log_likelihood() > -0.5 > -np.log(7)


def test_search_best_responds_to_the_learned_habit():
    """Against a player who always dumps its lowest card, the top prize is won cheaply with card 2 or 3;
    decoupled UCT, assuming a perfect searcher, bids a middle card (7 here)."""
    rng = np.random.default_rng(0)
    learned = MCTSAgent(simulations=20000, opponent="learned")
    learned.opponent_model = OpponentModel(13)
    _lowest_card_games(learned.opponent_model, 6, seed=100)
    state = GopsState.new(GopsConfig(13), prizes=(13, *range(1, 13)))
    assert learned.act(state, 1, rng) in (2, 3)
    assert MCTSAgent(simulations=20000).act(state, 1, rng) > 4
