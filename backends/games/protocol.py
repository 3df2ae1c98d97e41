"""The small game protocol every game of the suite implements (in the spirit of OpenSpiel's ``State``).

A game is found by name in :mod:`backends.games.registry` (``load_game``, as ``pyspiel.load_game``) and
says what it is in a :class:`GameType`. A **state** says who acts now (``current_players``: both GOPS players bid at once; in Avalon the seats
that owe the pending action), what each may do (``legal_actions(player)``), what each may know
(``view(player)``: the player's information set as plain data, the only thing an agent decides from),
and takes the actions of some or all current players (``apply({player: action})``, returning the next
state). ``is_terminal`` and ``returns()`` (one number per player) end it; ``to_log()`` and the class's
``from_log(text)`` write and replay it. An **agent** answers a view
with an action (``act(view)``). Generic code (the rules fuzz, ``play``) needs nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np


@dataclass(frozen=True)
class GameType:
    """What a game says about itself (OpenSpiel's ``GameType``/``GameInfo``): how its returns add up."""

    short_name: str
    long_name: str
    utility: Literal["zero_sum", "general_sum"]  # zero_sum: a terminal state's returns add up to 0
    min_utility: float
    max_utility: float


class State(Protocol):
    game_type: GameType

    @classmethod
    def new(cls, config: Any = None, seed: int | None = 0) -> State: ...
    @classmethod
    def from_log(cls, text: str) -> State: ...
    def to_log(self) -> str: ...
    @property
    def num_players(self) -> int: ...
    @property
    def is_terminal(self) -> bool: ...
    def current_players(self) -> list[int]: ...
    def legal_actions(self, player: int) -> Sequence[Any]: ...
    def apply(self, actions: Mapping[int, Any]) -> State: ...
    def returns(self) -> tuple[float, ...]: ...
    def view(self, player: int) -> dict: ...


class Agent(Protocol):
    def act(self, view: dict) -> Any: ...


def play(state: State, agents: Mapping[int, Agent], max_moves: int = 100_000) -> State:
    """Play to the end: every current player acts on its own view, then the actions are applied together."""
    for _ in range(max_moves):
        if state.is_terminal:
            return state
        state = state.apply({p: agents[p].act(state.view(p)) for p in state.current_players()})
    raise RuntimeError(f"no end after {max_moves} moves")


def random_playthrough(state: State, rng: np.random.Generator, check: Callable[[State], None] | None = None,
                       max_moves: int = 100_000) -> State:
    """Random legal play to the end, calling ``check(state)`` after every move (OpenSpiel's ``random_sim_test``):
    a rules fuzz. Every current player must have a legal action until the state is terminal."""
    if check is not None:
        check(state)
    for _ in range(max_moves):
        if state.is_terminal:
            return state
        actions = {}
        for p in state.current_players():
            legal = list(state.legal_actions(p))
            if not legal:
                raise AssertionError(f"player {p} must act but has no legal action")
            actions[p] = legal[int(rng.integers(len(legal)))]
        state = state.apply(actions)
        if check is not None:
            check(state)
    raise AssertionError(f"no end after {max_moves} moves")
