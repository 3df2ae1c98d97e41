"""What the Strategy Games tab's three parts share: quiet errors, the offered log file (written and read by
``backends.games.logs``), and choices shown with labels."""

from __future__ import annotations

import functools

import gradio as gr

from app.components.downloads import new_output_dir
from backends.common.params import field_spec
from backends.games import logs
from backends.games.match_store import guarded

LOG_LABEL = "Game log (JSON): your view while the game runs, the full log once it is over"
RELOAD_LABEL = "Reload a finished game (its full log) or resume yours (your view's log)"


def quiet(fn):
    """A game handler whose unexpected errors say what failed, never what it was holding (a role, a deck)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        error = None
        with guarded():
            try:
                return fn(*args, **kwargs)
            except gr.Error as e:  # already a message for the person
                error = e
        raise error
    return wrapper


def write_log(kind: str, name_and_text: tuple[str, str]) -> str:
    """The game's offered log in a new served folder (the backend writes it whole, or not at all)."""
    return str(logs.write_log(new_output_dir(kind), name_and_text))


def labelled(request_type: type, name: str, labels: dict, *, widget: str = "radio", **layout) -> gr.components.Component:
    """A choice field's control with words for its values (``labels``: value → words); the values, the default,
    the label and the help are the request's (``backends.common.params``), as ``app.components.params.control``
    makes them."""
    spec = field_spec(request_type, name)
    choices = [(labels.get(c, str(c)), c) for c in spec.param.choices]
    cls = gr.Radio if widget == "radio" else gr.Dropdown
    return cls(choices, value=spec.default, label=spec.label, info=spec.param.help, **layout)
