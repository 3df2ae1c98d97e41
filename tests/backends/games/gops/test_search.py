"""The compiled search: its leaf values, the states it hands to Python heuristics, its tree limits."""

import numpy as np

from backends.games.gops import search as gs
from backends.games.gops.agents import MCTSAgent, RandomAgent, play_game
from backends.games.gops.game import GopsConfig, GopsState
from backends.games.gops.heuristics import baseline_heuristic, state_dict


def _mask(cards) -> int:
    return sum(1 << (c - 1) for c in cards)


def _random_states(n=7, games=6, seed=0):
    rng = np.random.default_rng(seed)
    for g in range(games):
        s = GopsState.new(GopsConfig(n, tie_rule="carry" if g % 2 else "discard"), seed=g)
        while not s.is_terminal:
            yield s
            s = s.apply({0: int(rng.choice(s.hand(0))), 1: int(rng.choice(s.hand(1)))})


def test_compiled_baseline_equals_the_baseline_source():
    for s in _random_states():
        compiled = gs.baseline_value(s.config.num_cards, _mask(s.hand(0)), _mask(s.hand(1)), float(s.scores[0]),
                                     float(s.scores[1]), float(s.pot), s.prize, _mask(s.prizes[s.round + 1:]))
        assert compiled == baseline_heuristic(s)[0]


def test_python_heuristics_see_exactly_the_leaf_states():
    """Leaves handed to a Python heuristic are the states reached by replaying their bids."""
    seen = []

    def heuristic(states, cancel):
        seen.extend(states)
        return [baseline_heuristic(_from_dict(d)) for d in states]

    root = GopsState.new(GopsConfig(6, tie_rule="carry"), seed=3).apply({0: 2, 1: 2})  # a tie: the pot carries
    MCTSAgent(heuristic, simulations=300, batch=8).act(root, 1, np.random.default_rng(0))
    assert len(seen) > 200 and any(d["pot"] > 0 for d in seen)
    assert all(state_dict(_from_dict(d)) == d for d in seen)


def test_batched_python_leaves_agree_with_the_compiled_heuristic():
    root = GopsState.new(GopsConfig(6), seed=0).apply({0: 3, 1: 4})
    rng = np.random.default_rng(0)
    opts = {"simulations": 3000, "objective": "margin", "c": 0.5}
    compiled = MCTSAgent(**opts)
    python = MCTSAgent(lambda states, cancel: [baseline_heuristic(_from_dict(d)) for d in states], batch=8, **opts)
    assert compiled.act(root, 0, rng) == python.act(root, 0, rng)


def _from_dict(d) -> GopsState:
    """The state a leaf dict describes, rebuilt by replaying its bids (unseen prizes in any order)."""
    n = d["num_cards"]
    shown = d["prizes_played"] + [d["prize"]]
    s = GopsState.new(GopsConfig(n, d["tie_rule"]), prizes=tuple(shown + [p for p in range(1, n + 1) if p not in shown]))
    for b0, b1 in zip(d["p0_played"], d["p1_played"], strict=True):
        s = s.apply({0: b0, 1: b1})
    return s


def test_rollout_leaves_play_better_than_random():
    rng = np.random.default_rng(1)
    agent = MCTSAgent("rollout", simulations=400, objective="win_loss", c=1.0)
    wins = 0.0
    for g in range(20):
        seats = (agent, RandomAgent()) if g % 2 == 0 else (RandomAgent(), agent)
        end = play_game(seats, GopsState.new(GopsConfig(6), seed=g), rng)
        wins += (end.returns()[g % 2] + 1) / 2
    assert wins / 20 >= 0.75


def test_a_full_tree_stops_the_search_cleanly():
    agent = MCTSAgent(simulations=10_000, capacity=500)
    card = agent.act(GopsState.new(GopsConfig(13), seed=0), 0, np.random.default_rng(0))
    stats = agent.describe_last_move()
    assert card in range(1, 14) and stats["nodes"] <= 500 and stats["simulations"] < 10_000


def test_the_last_round_is_scored_exactly():
    """One card each left: every simulation ends the game, so the values are the true outcome."""
    s = GopsState.new(GopsConfig(3, prize_order="descending")).apply({0: 3, 1: 1}).apply({0: 1, 1: 3})  # 3 : 2, prize 1 left
    agent = MCTSAgent(simulations=10, objective="margin")
    agent.act(s, 0, np.random.default_rng(0))
    # player 0 holds 2, player 1 holds 2: a tie, the prize is discarded, 3 : 2 → margin 1/6
    assert agent.describe_last_move()["mean_value"] == [round(1 / 6, 3)]
