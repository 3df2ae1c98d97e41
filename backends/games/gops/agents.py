"""GOPS players: random, greedy, and MCTS with a value heuristic at the leaves.

The MCTS is decoupled UCT for simultaneous moves (as STRATEGIST's ``SMMonteCarlo``), compiled in
``gops.search``: at every node each player picks its own card by UCB over its own statistics, so
neither side ever conditions on the other's sealed bid; each simulation re-deals the prizes not yet
turned up (determinization). Python heuristics (LLM-written, sandboxed) score leaves in batches.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from backends.common.progress import CancelToken, raise_if_cancelled
from backends.games.gops.game import GopsState
from backends.games.gops.opponent import OpponentModel


class Agent(ABC):
    """A GOPS player: picks its bid before either bid is revealed.

    As the game protocol's agent, ``act(view)`` bids from the player's view alone (the unrevealed prizes'
    order is not in it; :meth:`GopsState.from_view` rebuilds a consistent state) with the agent's own
    ``rng``. ``act(state, player, rng)`` is the direct form for self-play and benches that hold the state;
    both give the same bid, since every agent sees only what the view holds."""

    name = "agent"
    rng: np.random.Generator | None = None  # for act(view); a fresh generator when unset
    # the Stop of the job this agent plays for (set by whoever runs it): a search checks it between its batches
    # and hands it to its leaf heuristic (a sandboxed strategy is killed mid-call); None: nothing stops it
    cancel: CancelToken | None = None

    def act(self, view: dict | GopsState, player: int | None = None, rng: np.random.Generator | None = None) -> int:
        if isinstance(view, dict):
            if self.rng is None:
                self.rng = np.random.default_rng()
            return self.bid(GopsState.from_view(view), int(view["player"]), rng or self.rng)
        return self.bid(view, player, rng)

    @abstractmethod
    def bid(self, state: GopsState, player: int, rng: np.random.Generator) -> int: ...

    def describe_last_move(self) -> dict:
        return {}


class RandomAgent(Agent):
    name = "random"

    def bid(self, state, player, rng):
        return int(rng.choice(state.hand(player)))


class GreedyAgent(Agent):
    """Bids the card equal to the prize (or the nearest card still in hand)."""

    name = "greedy"

    def bid(self, state, player, rng):
        hand = np.array(state.hand(player))
        return int(hand[np.argmin(np.abs(hand - state.prize))])


# A value heuristic over a batch of ``state_dict`` states and the job's Stop (a token, or None):
# [((p0 value, p1 value), intermediate dict), ...]
BatchHeuristic = Callable[[list[dict], CancelToken | None], list]


def _cards(mask: int, n: int) -> list[int]:
    return [c for c in range(1, n + 1) if mask >> (c - 1) & 1]


class _Pending:
    """Buffers for up to ``size`` leaves waiting for a Python heuristic (see ``gops.search.search``)."""

    def __init__(self, size: int, n: int):
        self.path = np.zeros((size, n + 1, 4), np.int64)
        self.length = np.zeros(size, np.int64)
        self.state = np.zeros((size, 3), np.float64)
        self.moves = np.zeros((size, 3), np.int64)

    @property
    def arrays(self):
        return self.path, self.length, self.state, self.moves


class MCTSAgent(Agent):
    """Decoupled-UCT MCTS (``gops.search``) with a value heuristic at the leaves.

    ``leaf``: ``"baseline"`` (the hand-written heuristic, compiled), ``"rollout"`` (random playouts, as
    OpenSpiel's MCTSBot) or a function scoring a batch of :func:`state_dict` states, e.g. a sandboxed
    strategy's ``evaluate`` — called once per ``batch`` leaves. Budget in simulations and/or seconds.
    ``objective``: back up only who wins (``"win_loss"``, the game's payoff) or the score margin
    (``"margin"``). Measured for the defaults (win/loss, c = 1): 66% ± 9% of 100 GOPS-13 games against
    OpenSpiel's MCTSBot at 50 ms a move (c = 0.2: 64% ± 7% of 200; margin, c = 0.5: 50% ± 18% of 30),
    and +0.10 ± 0.06 mean payoff against CFR's near-Nash GOPS-5 policy (c = 0.2: −0.08 ± 0.12).
    ``opponent``: ``"searcher"`` (decoupled UCT for both sides: assumes a perfect searcher) or
    ``"learned"``: the opponent's bids in the tree are sampled from an :class:`OpponentModel` fitted
    online to every bid it has revealed to this agent (this game and earlier ones) — search then
    best-responds to how this opponent actually plays. Measured against OpenSpiel's MCTSBot (GOPS-13, ~3,900
    simulations ≈ 50 ms a move, our agent given the peer's time move by move, ``bench.games.play_vs_openspiel``):
    learned 74.5% ± 4.3% of 400 games; searcher 60.3% ± 6.8% of 200 (learned on the same 200: 72.5% ± 6.2%).
    """

    def __init__(self, leaf: str | BatchHeuristic = "baseline", simulations: int = 300, seconds: float | None = None,
                 c: float = 1.0, rollouts: int = 1, batch: int = 32, objective: str = "win_loss", name: str = "mcts",
                 capacity: int = 1 << 18, opponent: str = "searcher"):
        if opponent not in ("searcher", "learned"):
            raise ValueError(f"opponent must be 'searcher' or 'learned', got {opponent!r}")
        self.leaf = leaf
        self.opponent = opponent
        self.opponent_model: OpponentModel | None = None
        self.simulations = simulations
        self.seconds = seconds
        self.c = c
        self.rollouts = rollouts
        self.batch = batch
        self.win_loss = objective == "win_loss"
        self.name = name
        self.capacity = capacity
        self._last: dict = {}
        # called as ``on_progress(simulations done, budget)`` between search batches (every 2% of a simulation
        # budget): a move played for a person reports its search and may be stopped there (the callback raises)
        self.on_progress: Callable[[int, int], None] | None = None

    def bid(self, state, player, rng):
        # the compiled search (numba) is imported at the first search, not with the module: the app's tab
        # imports this module while it starts, and numba alone costs a quarter of a second there
        from backends.games.gops import search as gs

        start = time.perf_counter()  # learning from the revealed bids counts against the move's time
        n = state.config.num_cards
        opp_w = np.zeros(0)
        if self.opponent == "learned":
            if self.opponent_model is None or self.opponent_model.n != n:
                self.opponent_model = OpponentModel(n)
            self.opponent_model.observe(state, 1 - player)
            opp_w = self.opponent_model.weights
        limit = self.simulations if self.seconds is None else 10**12
        tree = gs.Tree(n, min(self.capacity, limit + 2))
        hands = [sum(1 << (c - 1) for c in state.hand(p)) for p in (0, 1)]
        unseen = np.array(sorted(state.prizes[state.round + 1:]), np.int64)
        order = {"random": gs.ORDER_RANDOM, "descending": gs.ORDER_DESCENDING, "ascending": gs.ORDER_ASCENDING}[
            state.config.prize_order]
        if order == gs.ORDER_DESCENDING:
            unseen = unseen[::-1].copy()
        external = not isinstance(self.leaf, str)
        kind = gs.LEAF_EXTERNAL if external else {"baseline": gs.LEAF_BASELINE, "rollout": gs.LEAF_ROLLOUT}[self.leaf]
        chunk = min(self.batch, max(1, limit // 4)) if external else 64  # small budgets: feedback between batches
        pend = _Pending(chunk, n)
        sims, reported = 0, 0
        while True:
            raise_if_cancelled(self.cancel)  # a Stop of the job this search runs for ends it between two batches
            if self.on_progress is not None and self.seconds is None and sims * 50 // max(1, limit) > reported:
                reported = sims * 50 // max(1, limit)
                self.on_progress(sims, limit)
            k = min(chunk, limit - sims, tree.capacity - int(tree.count[0]))  # each simulation adds ≤ 1 node
            if k <= 0 or sims and self.seconds is not None and time.perf_counter() - start >= self.seconds:
                break
            pending = gs.search(tree.node_visits, tree.stat_n, tree.stat_w, tree.keys, tree.vals, tree.count, n,
                                hands[0], hands[1], float(state.scores[0]), float(state.scores[1]), float(state.pot),
                                int(state.prize or 0), unseen, order, state.config.tie_rule == "carry", k, kind,
                                self.rollouts, self.c, self.win_loss, int(rng.integers(2**31)), *pend.arrays,
                                opp_w, 1 - player, n)
            if pending:
                values = self._score_pending(state, pend, pending)
                gs.backup(tree.stat_w, pend.path, pend.length, values, pending)
            sims += k
            if not external and self.seconds is not None:
                chunk = min(chunk * 2, 4096) if time.perf_counter() - start < self.seconds / 8 else chunk
        visits = tree.stat_n[0, player]
        cards = list(state.hand(player))
        counts = [int(visits[c - 1]) for c in cards]
        best = cards[int(np.argmax(counts))]
        wsum = tree.stat_w[0, player]
        self._last = {
            "simulations": sims, "seconds": round(time.perf_counter() - start, 4), "nodes": int(tree.count[0]),
            "cards": cards, "visits": counts,
            "mean_value": [round(float(wsum[c - 1] / k), 3) if k else None for c, k in zip(cards, counts, strict=True)],
            "chosen": best,
        }
        return int(best)

    def _score_pending(self, root: GopsState, pend: _Pending, count: int) -> np.ndarray:
        """Score pending leaves with the Python heuristic: rebuild each leaf's state from its path."""
        n = root.config.num_cards
        total = n * (n + 1) / 2
        played0 = [b[0] for b in root.bids]
        played1 = [b[1] for b in root.bids]
        seen = list(root.prizes[: root.round + 1])
        states = []
        for i in range(count):
            steps = pend.path[i, : pend.length[i]].tolist()
            t0, t1, pot = (float(x) for x in pend.state[i])
            h0, h1, deck = (int(x) for x in pend.moves[i])
            prizes = seen + [s[3] for s in steps]
            states.append({
                "num_cards": n, "prize": prizes[-1], "prizes_played": prizes[:-1],
                "p0_played": played0 + [s[1] for s in steps], "p1_played": played1 + [s[2] for s in steps],
                "p0_score": t0, "p1_score": t1, "prizes_left": _cards(deck, n), "p0_hand": _cards(h0, n),
                "p1_hand": _cards(h1, n), "pot": pot, "tie_rule": root.config.tie_rule,
            })
        out = np.empty(count)
        for i, ((v0, v1), _extra) in enumerate(self.leaf(states, self.cancel)):
            d = float(v0) - float(v1)
            out[i] = np.sign(d) if self.win_loss else d / total
        return out

    def describe_last_move(self) -> dict:
        return dict(self._last)


def play_game(agents: tuple[Agent, Agent], state: GopsState, rng: np.random.Generator,
              cancel: CancelToken | None = None) -> GopsState:
    """Both agents bid on the same state (neither sees the other's bid), until the game ends; ``cancel`` (the
    job's Stop), when given, is handed to both and checked between moves."""
    if cancel is not None:
        for agent in agents:
            agent.cancel = cancel
    while not state.is_terminal:
        raise_if_cancelled(cancel)
        state = state.apply({p: agents[p].act(state, p, rng) for p in (0, 1)})
    return state
