"""Many random GOPS playouts at once with numpy: the fast path for rollouts and engine benchmarks.

From any state, each of ``n`` games deals the unseen prizes in a random order (when the prize order
is random) and lets both players bid their remaining cards in random order; ties are discarded or
carried like the engine does. Vectorised over games, looping only over the ≤ 13 remaining rounds.
"""

from __future__ import annotations

import numpy as np

from backends.games.gops.game import GopsState


def random_playouts(state: GopsState, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Final scores (player 0, player 1) of ``n`` random continuations of ``state``."""
    s0 = np.full(n, state.scores[0], dtype=np.float64)
    s1 = np.full(n, state.scores[1], dtype=np.float64)
    if state.is_terminal:
        return s0, s1
    h0, h1 = np.array(state.hand(0)), np.array(state.hand(1))
    rounds = len(h0)
    bids0 = h0[np.argsort(rng.random((n, rounds)), axis=1)]
    bids1 = h1[np.argsort(rng.random((n, rounds)), axis=1)]
    current = state.prizes[state.round]
    unseen = np.array(state.prizes[state.round + 1:], dtype=np.float64)
    if state.config.prize_order == "random" and len(unseen) > 1:
        unseen = unseen[np.argsort(rng.random((n, len(unseen))), axis=1)]
    else:
        unseen = np.broadcast_to(unseen, (n, len(unseen)))
    prizes = np.concatenate([np.full((n, 1), current, dtype=np.float64), unseen], axis=1)
    if state.config.tie_rule == "discard":
        s0 += (prizes * (bids0 > bids1)).sum(1)
        s1 += (prizes * (bids1 > bids0)).sum(1)
        return s0, s1
    pot = np.full(n, state.pot, dtype=np.float64)
    for r in range(rounds):
        value = prizes[:, r] + pot
        w0, w1 = bids0[:, r] > bids1[:, r], bids1[:, r] > bids0[:, r]
        s0 += value * w0
        s1 += value * w1
        pot = np.where(w0 | w1, 0.0, value)
    return s0, s1
