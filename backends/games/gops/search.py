"""Decoupled-UCT search over GOPS, compiled with numba: the tree lives in flat arrays, states in bitmasks.

This is the engine behind :class:`backends.games.gops.agents.MCTSAgent`. Every simulation re-deals
the prizes not yet turned up (determinization: the searcher must not know their order), walks down
the tree with each player picking its own card by UCB over its own statistics (neither side ever
conditions on the other's sealed bid, as STRATEGIST's ``SMMonteCarlo``), adds one node and scores it:

- ``LEAF_BASELINE``: the hand-written baseline heuristic, compiled (the same numbers as
  ``gops.heuristics.BASELINE_SOURCE``, tested);
- ``LEAF_ROLLOUT``: random playouts to the end (what OpenSpiel's ``MCTSBot`` does);
- ``LEAF_EXTERNAL``: any Python heuristic, e.g. an LLM-written one in the sandbox. Leaves are then
  collected in batches (each pending visit counts as a draw until its value arrives) so a whole batch
  costs one call into the sandbox.

Children are keyed by (parent, both bids, the next prize) in an open-addressing hash table.
"""

from __future__ import annotations

import numpy as np
from numba import njit

LEAF_BASELINE, LEAF_ROLLOUT, LEAF_EXTERNAL = 0, 1, 2
ORDER_RANDOM, ORDER_DESCENDING, ORDER_ASCENDING = 0, 1, 2


class Tree:
    """Flat arrays for up to ``capacity`` nodes of an ``n``-card game (node 0 is the root)."""

    def __init__(self, n: int, capacity: int):
        self.n, self.capacity = n, capacity
        self.node_visits = np.zeros(capacity, np.int64)
        self.stat_n = np.zeros((capacity, 2, n), np.int32)  # per node, player, card (card − 1)
        self.stat_w = np.zeros((capacity, 2, n), np.float64)  # summed values from that player's side
        size = 1 << int(np.ceil(np.log2(2 * capacity + 2)))
        self.keys = np.full(size, -1, np.int64)
        self.vals = np.zeros(size, np.int32)
        self.count = np.ones(1, np.int64)  # nodes in use


@njit(cache=True)
def _bit(card):
    return np.int64(1) << (card - 1)


@njit(cache=True)
def _find_or_add(keys, vals, count, capacity, key):
    """Child index for ``key``; a new node when absent (-1 when the tree is full). Returns (index, new)."""
    mask = keys.size - 1
    h = (key * np.int64(-7046029254386353131)) & mask
    while True:
        k = keys[h]
        if k == key:
            return vals[h], False
        if k == -1:
            if count[0] >= capacity:
                return -1, False
            idx = count[0]
            count[0] += 1
            keys[h] = key
            vals[h] = idx
            return idx, True
        h = (h + 1) & mask


@njit(cache=True)
def _unpack(mask, n):
    """The cards of a bitmask, ascending, and how many there are."""
    out = np.empty(n, np.int64)
    m = 0
    for c in range(1, n + 1):
        if (mask >> (c - 1)) & 1:
            out[m] = c
            m += 1
    return out, m


@njit(cache=True)
def baseline_value(n, h0, h1, s0, s1, pot, prize, deck_mask):
    """Scores so far plus the remaining prizes matched rank by rank to both hands (ties split)."""
    prizes, m = _unpack(deck_mask | _bit(prize), n)
    a, _ = _unpack(h0, n)
    b, _ = _unpack(h1, n)
    v0 = s0 + pot / 2.0
    v1 = s1 + pot / 2.0
    for k in range(m):
        if a[k] > b[k]:
            v0 += prizes[k]
        elif b[k] > a[k]:
            v1 += prizes[k]
        else:
            v0 += prizes[k] / 2.0
            v1 += prizes[k] / 2.0
    return v0, v1


@njit(cache=True)
def _rollout(n, h0, h1, s0, s1, pot, prize, deck, di, carry):
    """One random playout: both players bid their remaining cards in random order."""
    a, m = _unpack(h0, n)
    b, _ = _unpack(h1, n)
    for k in range(m - 1, 0, -1):
        r = np.random.randint(0, k + 1)
        a[k], a[r] = a[r], a[k]
        r = np.random.randint(0, k + 1)
        b[k], b[r] = b[r], b[k]
    p = prize
    for k in range(m):
        value = p + pot
        if a[k] > b[k]:
            s0 += value
            pot = 0.0
        elif b[k] > a[k]:
            s1 += value
            pot = 0.0
        else:
            pot = value if carry else 0.0
        p = deck[di] if di < deck.size else 0
        di += 1
    return s0, s1


@njit(cache=True)
def _select(stat_n, stat_w, node_n, node, player, hand, n, c):
    """UCB for one player over the cards in ``hand``; untried cards first; ties broken at random
    (with a fixed order both players of a symmetric position would always tie)."""
    best = -1e300
    pick = 0
    ties = 0
    untried = 0
    for card in range(1, n + 1):
        if (hand >> (card - 1)) & 1 and stat_n[node, player, card - 1] == 0:
            untried += 1
            if np.random.randint(0, untried) == 0:
                pick = card
    if untried:
        return pick
    logn = np.log(max(node_n, 1))
    for card in range(1, n + 1):
        if not (hand >> (card - 1)) & 1:
            continue
        k = stat_n[node, player, card - 1]
        u = stat_w[node, player, card - 1] / k + c * np.sqrt(logn / k)
        if u > best + 1e-12:
            best = u
            pick = card
            ties = 1
        elif u >= best - 1e-12:
            ties += 1
            if np.random.randint(0, ties) == 0:
                pick = card
    return pick


@njit(cache=True)
def _model_pick(w, hand, n, prize, prizes_left):
    """A card drawn from an opponent model: a softmax over the cards in ``hand`` of ``w`` · features of
    (card, prize, the prizes still to come) — see ``gops.opponent.FEATURES``."""
    cards, m = _unpack(hand, n)
    rest, k = _unpack(prizes_left | _bit(prize), n)
    pr = 0.5
    if m > 1:
        for j in range(k):
            if rest[j] == prize:
                pr = j / (m - 1)
    logits = np.empty(m)
    top = -1e300
    for i in range(m):
        c = cards[i]
        r = i / (m - 1) if m > 1 else 0.5
        z = (w[0] * (c - prize) / n + w[1] * abs(c - prize) / n + w[2] * r + w[3] * (i == 0)
             + w[4] * (i == m - 1) + w[5] * abs(r - pr) + w[6] * (r - pr))
        logits[i] = z
        top = max(top, z)
    total = 0.0
    for i in range(m):
        logits[i] = np.exp(logits[i] - top)
        total += logits[i]
    u = np.random.random() * total
    for i in range(m):
        u -= logits[i]
        if u <= 0:
            return cards[i]
    return cards[m - 1]


@njit(cache=True)
def _to_value(v0, v1, total, win_loss):
    d = v0 - v1
    if win_loss:
        return 1.0 if d > 0 else (-1.0 if d < 0 else 0.0)
    return d / total


@njit(cache=True)
def search(node_visits, stat_n, stat_w, keys, vals, count, n, h0, h1, s0, s1, pot, prize, unseen, order, carry,
           sims, leaf, rollouts, c, win_loss, seed, pend_path, pend_len, pend_state, pend_moves, opp_w, opp_player,
           opp_depth):
    """Run ``sims`` simulations from the root. With ``LEAF_EXTERNAL`` every new node is left pending:
    its path (nodes and bids) goes into the ``pend_*`` arrays for the caller to score and back up with
    :func:`backup`; the return value is how many are pending (0 for the compiled leaves)."""
    if seed >= 0:
        np.random.seed(seed)
    capacity = node_visits.size
    total = n * (n + 1) / 2.0
    deck = unseen.copy()
    pending = 0
    path = np.empty((n + 1, 4), np.int64)  # node, card of player 0, card of player 1, prize turned up next
    for _ in range(sims):
        if order == ORDER_RANDOM:
            for k in range(deck.size - 1, 0, -1):
                r = np.random.randint(0, k + 1)
                deck[k], deck[r] = deck[r], deck[k]
        node = 0
        a, b, t0, t1, tp, p = h0, h1, s0, s1, pot, prize
        deck_mask = np.int64(0)
        for k in range(deck.size):
            deck_mask |= _bit(deck[k])
        di = 0
        depth = 0
        value = 0.0
        pend = False  # a new node waiting for a Python heuristic's value
        while True:
            if p == 0:  # the game is over: the exact result
                value = _to_value(t0, t1, total, win_loss)
                break
            c0 = _select(stat_n, stat_w, node_visits[node], node, 0, a, n, c)
            c1 = _select(stat_n, stat_w, node_visits[node], node, 1, b, n, c)
            if opp_w.size and depth < opp_depth:  # the opponent as modelled, not as a searcher
                if opp_player == 0:
                    c0 = _model_pick(opp_w, a, n, p, deck_mask)
                else:
                    c1 = _model_pick(opp_w, b, n, p, deck_mask)
            path[depth, 0] = node
            path[depth, 1] = c0
            path[depth, 2] = c1
            depth += 1
            v = p + tp
            if c0 > c1:
                t0 += v
                tp = 0.0
            elif c1 > c0:
                t1 += v
                tp = 0.0
            else:
                tp = v if carry else 0.0
            a &= ~_bit(c0)
            b &= ~_bit(c1)
            p = deck[di] if di < deck.size else 0
            di += 1
            if p:
                deck_mask &= ~_bit(p)
            path[depth - 1, 3] = p
            key = ((node * n + (c0 - 1)) * n + (c1 - 1)) * (n + 1) + p
            child, new = _find_or_add(keys, vals, count, capacity, key)
            if child < 0:  # the tree is full: score this state without storing it
                new = True
            if new:
                if p == 0:
                    value = _to_value(t0, t1, total, win_loss)
                elif leaf == LEAF_BASELINE:
                    v0, v1 = baseline_value(n, a, b, t0, t1, tp, p, deck_mask)
                    value = _to_value(v0, v1, total, win_loss)
                elif leaf == LEAF_ROLLOUT:
                    acc = 0.0
                    for _r in range(rollouts):
                        r0, r1 = _rollout(n, a, b, t0, t1, tp, p, deck, di, carry)
                        acc += _to_value(r0, r1, total, win_loss)
                    value = acc / rollouts
                else:
                    pend = child >= 0
                break
            node = child
        for k in range(depth):  # count the visit now; the value follows (external leaves: later)
            nd = path[k, 0]
            node_visits[nd] += 1
            stat_n[nd, 0, path[k, 1] - 1] += 1
            stat_n[nd, 1, path[k, 2] - 1] += 1
            if not pend:
                stat_w[nd, 0, path[k, 1] - 1] += value
                stat_w[nd, 1, path[k, 2] - 1] -= value
        if pend:
            pend_len[pending] = depth
            for k in range(depth):
                pend_path[pending, k, 0] = path[k, 0]
                pend_path[pending, k, 1] = path[k, 1]
                pend_path[pending, k, 2] = path[k, 2]
                pend_path[pending, k, 3] = path[k, 3]
            pend_state[pending, 0] = t0
            pend_state[pending, 1] = t1
            pend_state[pending, 2] = tp
            pend_moves[pending, 0] = a
            pend_moves[pending, 1] = b
            pend_moves[pending, 2] = deck_mask
            pending += 1
    return pending


@njit(cache=True)
def backup(stat_w, pend_path, pend_len, values, count):
    """Add the values of ``count`` pending leaves (player 0's side) along their paths."""
    for i in range(count):
        for k in range(pend_len[i]):
            nd = pend_path[i, k, 0]
            stat_w[nd, 0, pend_path[i, k, 1] - 1] += values[i]
            stat_w[nd, 1, pend_path[i, k, 2] - 1] -= values[i]
