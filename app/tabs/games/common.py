"""What the Strategy Games tab's three parts share: the seed field, quiet errors, the offered log file
(written and read by ``backends.games.logs``)."""

from __future__ import annotations

import functools
import logging

import gradio as gr

from app.components.downloads import new_output_dir
from backends.common.errors import Cancelled, DiskFullError, InputError, ModelCorruptError, ModelMissingError
from backends.games import logs

LOG_LABEL = "Game log (JSON): your view while the game runs, the full log once it is over"
RELOAD_LABEL = "Reload a finished game (its full log) or resume yours (your view's log)"
log = logging.getLogger(__name__)


def seed_value(value) -> int | None:
    """The seed field: empty or negative means a fresh random deal."""
    return None if value in (None, "") or int(value) < 0 else int(value)


def quiet(fn):
    """A game handler whose unexpected errors say what failed, never what it was holding (a role, a deck)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (InputError, ModelMissingError, ModelCorruptError, Cancelled, DiskFullError, gr.Error):
            raise
        except Exception as e:
            log.exception("a game handler failed")
            raise InputError(f"The game failed unexpectedly ({e.__class__.__name__}); the details are in the "
                             f"server's log. Start a new game.") from None
    return wrapper


def write_log(kind: str, name_and_text: tuple[str, str]) -> str:
    """The game's offered log in a new served folder (the backend writes it whole, or not at all)."""
    return str(logs.write_log(new_output_dir(kind), name_and_text))
