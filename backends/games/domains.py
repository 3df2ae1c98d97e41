"""The games STRATEGIST can improve strategies for: one line per game in ``DOMAINS``.

Each line names the game's domain class (``module:Class``, imported on first use), which says what a
strategy of that game is, how it is scored and what the LLM reflects on (see
``strategist.loop.Domain``). The generic loop, the run files and the run service find a game only here.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from backends.common.errors import InputError

DOMAINS: dict[str, str] = {
    "gops": "backends.games.gops.domain:GopsDomain",
    "avalon": "backends.games.avalon.domain:AvalonDomain",
}

# Strategy libraries saved before strategies recorded their game hold strategies of the first game.
DEFAULT_GAME = next(iter(DOMAINS))


def games() -> tuple[str, ...]:
    return tuple(DOMAINS)


def domain_class(game: str) -> type:
    if game not in DOMAINS:
        raise InputError(f"Unknown game {game!r}: STRATEGIST knows {', '.join(DOMAINS)}.")
    module, _, name = DOMAINS[game].partition(":")
    return getattr(importlib.import_module(module), name)


def kind_of(game: str, part: str) -> str:
    """A run's kind: the game, or "game-part" for a game whose runs improve one of several parts."""
    parts = domain_class(game).parts
    if part not in parts:
        raise InputError(f"A {game} run improves {' or '.join(parts)}, not {part!r}.")
    return game if len(parts) == 1 else f"{game}-{part}"


def parse_kind(kind: str) -> tuple[str, str]:
    """(game, part) of a run kind (see :func:`kind_of`)."""
    game, _, part = str(kind).partition("-")
    cls = domain_class(game)
    part = part or cls.parts[0]
    kind_of(game, part)  # a part the game has
    return game, part


def run_kinds() -> dict[str, str]:
    """Every run kind with what the user is shown, in registry order."""
    out = {}
    for game in DOMAINS:
        cls = domain_class(game)
        out.update({kind_of(game, part): cls.labels[part] for part in cls.parts})
    return out


def create(game: str, settings=None, llm=None):
    """The domain of ``game`` with its evaluation ``settings`` (its defaults when None)."""
    return domain_class(game)(settings, llm)


def for_settings(settings, llm=None):
    """The domain whose evaluation settings ``settings`` are (a domain passes through)."""
    if hasattr(settings, "evaluate") and hasattr(settings, "game"):
        return settings
    for game in DOMAINS:
        cls = domain_class(game)
        if isinstance(settings, cls.settings_type):
            return cls(settings, llm)
    raise InputError(f"No game's evaluation settings are a {type(settings).__name__}.")


def shipped_library(game: str) -> Path:
    """The library of the STRATEGIST run shipped with the suite for ``game`` (in ``assets/games-strategist``)."""
    from backends.common.settings import get_settings

    return get_settings().assets_dir / "games-strategist" / domain_class(game).shipped_run / "library.json"
