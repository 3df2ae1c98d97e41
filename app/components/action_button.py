"""Bind a backend :class:`~backends.common.action.Action` to a button: the one long-work handler of the app.

:func:`bind_action` wires a trigger to the action with everything a long action has in every tab: the
request built from the inputs (a refused input is a clear error and changes nothing), a progress bar
and previews, a Stop button that stops the work between two steps (``longwork.CANCELS``), the run's
files and run card written by the backend (``Action.write_run``) into a served output folder, an
error that keeps what the page showed (``failures.listen``), the shared "gpu" queue for heavy work,
and the API name taken from the action. The tab only says how inputs become a request and how a
result is shown.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gradio as gr

from backends.common.action import Action
from backends.common.errors import Cancelled

from .downloads import new_output_dir
from .errors import user_errors
from .failures import listen
from .longwork import CANCELS, stream

STOPPED = "Stopped by the user: this run made no new results; what is shown below (if anything) is the previous run's."


def bind_action(action: Action, *, trigger, inputs: Sequence[gr.components.Component],
                outputs: Sequence[gr.components.Component], status: gr.components.Component,
                to_request: Callable[..., Any], show: Callable[[Any, Any, dict[str, Path]], tuple],
                stop: gr.Button | None = None, preview: gr.components.Component | None = None,
                to_preview: Callable[[Any], Any] = lambda item: item, running: str | Callable[[Any], str] = "Running…",
                stopped: str | Callable[[Any], tuple] = STOPPED, folder: Callable[[Any], Path] | None = None,
                api_name: str | None = None, **listen_kwargs):
    """Wire ``trigger`` (a listener such as ``button.click``) to run ``action``; returns the dependency.

    ``to_request(*input values)`` makes the request (raise ``InputError`` to refuse it); ``show(request,
    result, paths)`` returns ``(status text, *values for the other outputs)``. The event's outputs are
    ``outputs`` in the order given, so an API keeps its order: ``status`` and ``preview`` may stand
    anywhere in it (where they are not in it, they go first: ``[preview?, status, *outputs]``); the values
    of ``show`` and ``stopped`` are for the outputs other than those two, in order. ``stopped`` is the
    status text after a Stop, or a function of the request giving ``(status text, *values)``.
    ``folder(request)`` is where the run is written (default: a new served output folder of the capability).
    """
    order = list(outputs)
    if not any(c is status for c in order):
        order.insert(0, status)
    if preview is not None and not any(c is preview for c in order):
        order.insert(0, preview)
    at_status = next(i for i, c in enumerate(order) if c is status)
    at_preview = next((i for i, c in enumerate(order) if c is preview), None) if preview is not None else None
    others = [i for i in range(len(order)) if i not in (at_status, at_preview)]
    keep = (gr.update(),) * len(others)

    def row(text=None, picture=None, rest=keep) -> tuple:
        """One value per output: the status text, the preview, and the others in order (None: unchanged)."""
        out = [gr.update()] * len(order)
        out[at_status] = gr.update() if text is None else text
        if at_preview is not None and picture is not None:
            out[at_preview] = picture
        for i, v in zip(others, rest, strict=True):
            out[i] = v
        return tuple(out)

    def handler(*args):
        *inputs_given, request, progress = args
        req = to_request(*inputs_given)
        token = CANCELS.start(request, action.name)
        try:
            yield row(running(req) if callable(running) else running)
            for kind, item in stream(action.run(req, token), progress):
                if kind == "preview":
                    if preview is not None:
                        yield row(picture=to_preview(item))
                else:
                    where = folder(req) if folder is not None else new_output_dir(action.capability)
                    paths = action.write_run(req, item, where)
                    text, *rest = show(req, item, paths)
                    yield row(text, rest=rest)
        except Cancelled:
            text, *rest = stopped(req) if callable(stopped) else (stopped, *keep)
            yield row(text, rest=rest)
        finally:
            CANCELS.finish(request, action.name, token)

    params = [inspect.Parameter(f"value_{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD) for i in range(len(inputs))]
    params += [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=gr.Request),
               inspect.Parameter("progress", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=gr.Progress())]
    handler.__signature__ = inspect.Signature(params)
    handler.__annotations__ = {"request": gr.Request}  # Gradio finds its special arguments by type hint
    handler.__name__ = f"on_{action.name}"
    handler.__doc__ = action.description or None
    listen_kwargs.setdefault("concurrency_id", "gpu" if action.heavy else f"{action.capability}-light")
    dependency = listen(trigger, user_errors(handler), status=status, inputs=list(inputs), outputs=order,
                        api_name=api_name or action.name, **listen_kwargs)
    if stop is not None:
        bind_stop(stop, action, status)
    return dependency


def bind_stop(stop: gr.Button, action: Action, status: gr.components.Component, api_name: str | None = None) -> None:
    """``stop`` cancels this session's running ``action`` (unqueued: it never waits behind the work)."""

    def on_stop(request: gr.Request) -> str:
        return "Stopping…" if CANCELS.cancel(request, action.name) else "Nothing is running."

    on_stop.__name__ = f"on_{action.name}_stop"
    stop.click(on_stop, outputs=status, api_name=api_name or f"{action.capability}_stop", queue=False)
