import numpy as np

from backends.games.gops.agents import MCTSAgent
from backends.games.gops.game import GopsConfig, GopsState
from backends.games.gops.heuristics import (
    BASELINE_SOURCE,
    baseline_heuristic,
    sandboxed_heuristic,
    state_dict,
)
from backends.games.strategist.sandbox import SandboxedFunction


def test_the_baseline_source_matches_the_built_in_heuristic():
    rng = np.random.default_rng(0)
    with SandboxedFunction(BASELINE_SOURCE) as fn:
        h = sandboxed_heuristic(fn)
        for seed in range(5):
            s = GopsState.new(GopsConfig(7), seed=seed)
            while not s.is_terminal:
                assert h(s)[0] == baseline_heuristic(s)[0]
                s = s.apply({0: int(rng.choice(s.hand(0))), 1: int(rng.choice(s.hand(1)))})


def test_state_dict_hides_nothing_a_player_cannot_know():
    s = GopsState.new(GopsConfig(5), prizes=(3, 1, 5, 2, 4)).apply({0: 2, 1: 4})
    d = state_dict(s)
    assert d["prize"] == 1 and d["prizes_played"] == [3] and d["prizes_left"] == [2, 4, 5]  # sorted: no order
    assert d["p0_hand"] == [1, 3, 4, 5] and d["p1_played"] == [4]


def test_mcts_runs_with_a_sandboxed_heuristic():
    with SandboxedFunction(BASELINE_SOURCE) as fn:
        agent = MCTSAgent(fn.evaluate, simulations=16)
        card = agent.act(GopsState.new(GopsConfig(5), seed=1), 0, np.random.default_rng(0))
    assert card in range(1, 6)
