"""GOPS players: random, greedy, and MCTS with a value heuristic at the leaves.

The MCTS is decoupled UCT for simultaneous moves (as STRATEGIST's ``SMMonteCarlo``): at every node each
player picks its own card by UCB over its own statistics, so neither side ever conditions on the
other's sealed bid. Unseen prizes are hidden information: each simulation re-deals the cards not yet
turned up (determinization), and children are keyed by the joint bid and the prize that follows.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from .gops import GopsState
from .gops_heuristics import ValueHeuristic, baseline_heuristic


class Agent(ABC):
    """A GOPS player: picks its bid from the state before either bid is revealed."""

    name = "agent"

    @abstractmethod
    def act(self, state: GopsState, player: int, rng: np.random.Generator) -> int: ...

    def describe_last_move(self) -> dict:
        return {}


class RandomAgent(Agent):
    name = "random"

    def act(self, state, player, rng):
        return int(rng.choice(state.hand(player)))


class GreedyAgent(Agent):
    """Bids the card equal to the prize (or the nearest card still in hand)."""

    name = "greedy"

    def act(self, state, player, rng):
        hand = np.array(state.hand(player))
        return int(hand[np.argmin(np.abs(hand - state.prize))])


@dataclass
class _Stats:
    visits: np.ndarray
    value: np.ndarray


@dataclass
class _Node:
    actions: tuple[tuple[int, ...], tuple[int, ...]]
    stats: tuple[_Stats, _Stats]
    visits: int = 0
    children: dict = field(default_factory=dict)

    @classmethod
    def make(cls, state: GopsState) -> _Node:
        acts = (state.hand(0), state.hand(1))
        return cls(acts, tuple(_Stats(np.zeros(len(a)), np.zeros(len(a))) for a in acts))


class MCTSAgent(Agent):
    """Decoupled-UCT MCTS with ``heuristic`` at the leaves; budget in simulations and/or seconds."""

    def __init__(self, heuristic: ValueHeuristic = baseline_heuristic, simulations: int = 300,
                 seconds: float | None = None, c: float = 0.5, max_depth: int = 6, name: str = "mcts"):
        self.heuristic = heuristic
        self.simulations = simulations
        self.seconds = seconds
        self.c = c
        self.max_depth = max_depth
        self.name = name
        self._last: dict = {}

    def act(self, state, player, rng):
        root = _Node.make(state)
        total = state.config.num_cards * (state.config.num_cards + 1) / 2
        start = time.perf_counter()
        sims = 0
        while sims < self.simulations if self.seconds is None else time.perf_counter() - start < self.seconds:
            self._simulate(root, self._determinize(state, rng), total, 0, rng)
            sims += 1
        st = root.stats[player]
        best = int(np.argmax(st.visits))
        self._last = {
            "simulations": sims, "seconds": round(time.perf_counter() - start, 4),
            "cards": list(root.actions[player]), "visits": st.visits.astype(int).tolist(),
            "mean_value": [round(float(v / n), 3) if n else None for v, n in zip(st.value, st.visits, strict=True)],
            "chosen": root.actions[player][best],
        }
        return int(root.actions[player][best])

    def describe_last_move(self) -> dict:
        return dict(self._last)

    @staticmethod
    def _determinize(state: GopsState, rng) -> GopsState:
        """Re-deal the prizes not yet turned up: the searcher must not know their order."""
        if state.config.prize_order != "random" or state.is_terminal:
            return state
        seen = state.prizes[: state.round + 1]
        unseen = list(state.prizes[state.round + 1:])
        rng.shuffle(unseen)
        return GopsState(state.config, seen + tuple(unseen), state.bids, state.scores, state.pot, state.seed)

    def _select(self, node: _Node, player: int, rng) -> int:
        """UCB for one player; ties (and the untried) are broken at random — with a fixed order both
        players of a symmetric position would always pick the same card and only ever see ties."""
        st = node.stats[player]
        untried = np.flatnonzero(st.visits == 0)
        if len(untried):
            return int(rng.choice(untried))
        ucb = st.value / st.visits + self.c * np.sqrt(math.log(node.visits) / st.visits)
        return int(rng.choice(np.flatnonzero(ucb >= ucb.max() - 1e-12)))

    def _simulate(self, node: _Node, state: GopsState, total: float, depth: int, rng) -> tuple[float, float]:
        if state.is_terminal or depth >= self.max_depth:
            (v0, v1), _ = self.heuristic(state)
            d = (v0 - v1) / total
            return d, -d
        i0, i1 = self._select(node, 0, rng), self._select(node, 1, rng)
        a0, a1 = node.actions[0][i0], node.actions[1][i1]
        child_state = state.apply(a0, a1)
        key = (a0, a1, child_state.prize)
        child = node.children.get(key)
        if child is None:
            child = node.children[key] = _Node.make(child_state)
            (v0, v1), _ = self.heuristic(child_state)
            d = (v0 - v1) / total
            values = (d, -d)
        else:
            values = self._simulate(child, child_state, total, depth + 1, rng)
        node.visits += 1
        for p, idx in ((0, i0), (1, i1)):
            node.stats[p].visits[idx] += 1
            node.stats[p].value[idx] += values[p]
        return values


def play_game(agents: tuple[Agent, Agent], state: GopsState, rng: np.random.Generator) -> GopsState:
    """Both agents bid on the same state (neither sees the other's bid), until the game ends."""
    while not state.is_terminal:
        state = state.apply(agents[0].act(state, 0, rng), agents[1].act(state, 1, rng))
    return state
