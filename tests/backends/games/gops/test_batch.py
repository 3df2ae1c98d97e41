import numpy as np
import pytest

from backends.games.gops.batch import random_playouts
from backends.games.gops.game import GopsConfig, GopsState


@pytest.mark.parametrize("tie_rule", ["discard", "carry"])
def test_batched_playouts_match_the_engine_in_distribution(tie_rule):
    """Mean final scores of batched random playouts agree with playing the engine move by move."""
    rng = np.random.default_rng(0)
    start = GopsState.new(GopsConfig(6, tie_rule), seed=4).apply({0: 3, 1: 5})
    b0, b1 = random_playouts(start, 20000, rng)
    engine = []
    for _ in range(3000):
        s = start
        while not s.is_terminal:
            s = s.apply({0: int(rng.choice(s.hand(0))), 1: int(rng.choice(s.hand(1)))})
        engine.append(s.scores)
    engine = np.array(engine)
    assert abs(b0.mean() - engine[:, 0].mean()) < 0.3 and abs(b1.mean() - engine[:, 1].mean()) < 0.3
    total = sum(range(1, 7))
    if tie_rule == "discard":
        assert (b0 + b1 <= total).all()
    assert ((b0 + b1) % 1 == 0).all()


def test_terminal_and_fixed_order_states():
    s = GopsState.new(GopsConfig(3, prize_order="descending"))
    end = s.apply({0: 3, 1: 1}).apply({0: 2, 1: 2}).apply({0: 1, 1: 3})
    b0, b1 = random_playouts(end, 5, np.random.default_rng(0))
    assert (b0 == end.scores[0]).all() and (b1 == end.scores[1]).all()
    b0, b1 = random_playouts(s.apply({0: 1, 1: 3}).apply({0: 2, 1: 1}), 10, np.random.default_rng(0))  # one round left: forced
    assert (b0 == 2 + 1).all() and (b1 == 3).all()  # p0 plays its 3 against a 2 for the last prize
