"""Every game of the suite by name, as ``pyspiel.load_game``: one line per game in ``GAMES``.

A game is its state class (``module:Class``, imported on first use), which follows the game protocol
(:mod:`backends.games.protocol`): ``new(config, seed)``, ``apply({player: action})``, ``returns()``,
``to_log()`` / ``from_log(text)``, and a ``game_type`` and ``config_type``. Generic code (the random-play
test over all games) finds the games only here; STRATEGIST's improvement domains are in ``domains``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from backends.common.errors import InputError
from backends.games.protocol import GameType, State

GAMES: dict[str, str] = {
    "gops": "backends.games.gops.game:GopsState",
    "avalon": "backends.games.avalon.game:AvalonGame",
}


def registered_names() -> tuple[str, ...]:
    return tuple(GAMES)


def game_class(name: str) -> type:
    if name not in GAMES:
        raise InputError(f"Unknown game {name!r}: the suite has {', '.join(GAMES)}.")
    module, _, cls = GAMES[name].partition(":")
    return getattr(importlib.import_module(module), cls)


@dataclass(frozen=True)
class Game:
    """A game with its parameters fixed (OpenSpiel's ``Game``): it makes initial states and replays logs."""

    name: str
    state_class: type
    config: Any

    @property
    def game_type(self) -> GameType:
        return self.state_class.game_type

    def new_initial_state(self, seed: int | None = 0) -> State:
        return self.state_class.new(self.config, seed=seed)

    def state_from_log(self, text: str) -> State:
        return self.state_class.from_log(text)


def load_game(name: str, **params) -> Game:
    """The game ``name`` with ``params`` (its config's fields; its defaults when none), e.g.
    ``load_game("gops", num_cards=5, tie_rule="carry")``."""
    cls = game_class(name)
    try:
        config = cls.config_type(**params)
    except TypeError as e:
        raise InputError(f"Bad parameters for {name}: {e}") from None
    return Game(name, cls, config)
