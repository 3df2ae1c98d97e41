"""An error never takes away what the person had.

When a handler raises ``gr.Error``, Gradio puts an "Error" badge on every output of the event (over
the picture, gallery or video the person already had) and leaves a status line that said
"Running…" as it was. :func:`listen` wires an action so that its progress and any error show on one
status line only, and a failed action then writes its message beside that line's previous text (the
last result's description stays), clearing the badge there: every other output keeps what it showed.
API callers still get the error itself (the note is a browser-side follow-up).

The note needs the failed action's message; :class:`~app.components.blocks.StudioBlocks` hands every
failure to :func:`remember`, keyed by browser session and event, and the note takes it from there.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import gradio as gr

from backends.common.redact import redact_paths

NOTE = "❌ "  # starts the error note written into a status line
SEPARATOR = "\n\n"
FALLBACK = "This action did not finish; what is shown was not changed."
_MAX_KEPT = 512  # failures of API callers are never collected by a note; keep the newest few

_failures: OrderedDict[tuple[str, int], str] = OrderedDict()
_lock = threading.Lock()


def message_of(exc: BaseException) -> str:
    """The text a person reads for an exception that reached Gradio."""
    if isinstance(exc, gr.Error):
        return str(exc.message)
    return redact_paths(f"{exc.__class__.__name__}: {exc}")


def remember(session_hash: str | None, fn_id: int, exc: BaseException) -> None:
    """Keep the message of an event that failed in a browser session, for its note."""
    if not session_hash:
        return
    with _lock:
        _failures[(session_hash, fn_id)] = message_of(exc)
        _failures.move_to_end((session_hash, fn_id))
        while len(_failures) > _MAX_KEPT:
            _failures.popitem(last=False)


def take(session_hash: str | None, fn_id: int) -> str | None:
    with _lock:
        return _failures.pop((session_hash or "", fn_id), None)


def with_note(status: str | None, message: str, keep: bool = True) -> str:
    """The status line's text with ``message`` as its error note.

    What the line said before stays (the description of the result still shown), except an earlier
    error note and a line that says work is under way (it ends in "…"; after an error none is).
    With ``keep=False`` the note replaces the text (a line about the input that was just refused).
    """
    text = (status or "").strip() if keep else ""
    if text.startswith(NOTE):
        text = ""
    text = text.split(SEPARATOR + NOTE, 1)[0].rstrip()
    if text.endswith("…"):
        text = ""
    note = NOTE + message.replace("\n", " ")
    return f"{text}{SEPARATOR}{note}" if text else note


def listen(trigger: Callable | Sequence[Callable], fn: Callable, *, status: gr.Component,
           progress_on: Sequence[gr.Component] = (), keep_status: bool = True,
           restore: Sequence[tuple[gr.Component, gr.State]] = (), **kwargs):
    """``trigger(fn, **kwargs)`` with progress on ``status`` (and ``progress_on``), and an error note.

    ``trigger`` is an event listener (``button.click``) or a list of them (as ``gr.on`` takes). If the
    action fails, ``status`` gets the message (see :func:`with_note`; ``keep_status``) and nothing else
    changes, except that each ``(input, state)`` of ``restore`` puts the input back to the value the
    state kept (an upload that was refused gives way to the one still in use). Returns the action's
    dependency.
    """
    targets = [status, *progress_on]
    triggers = list(trigger) if isinstance(trigger, list | tuple) else [trigger]
    # what the status line said when the action started (the action may overwrite it with "Running…"):
    # registered first and unqueued, so it is kept long before the action could fail
    before = gr.State(None)
    for each in triggers:
        each(_same, inputs=status, outputs=before, queue=False, show_progress="hidden", api_visibility="private")
    if isinstance(trigger, list | tuple):
        event = gr.on(triggers, fn, show_progress_on=targets, **kwargs)
    else:
        event = trigger(fn, show_progress_on=targets, **kwargs)
    fn_id = event["id"]

    def note(request: gr.Request, current: str | None, earlier: str | None, *kept):
        message = take(getattr(request, "session_hash", None), fn_id) or FALLBACK
        text = with_note(earlier if earlier is not None else current, message, keep_status)
        values = (text, *(gr.skip() for _ in progress_on), *kept)
        return values if len(values) > 1 else values[0]

    # the note's outputs include every component that showed the badge: writing them clears it
    event.failure(note, inputs=[status, before, *(state for _, state in restore)],
                  outputs=[*targets, *(component for component, _ in restore)], show_progress="hidden",
                  queue=False, api_visibility="private")
    return event


def _same(value):
    return value
