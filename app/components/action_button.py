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

import contextvars
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
from .params import api_docstring

NOTHING_RUNNING = "Nothing is running."
STOPPED = "Stopped by the user: this run made no new results; what is shown below (if anything) is the previous run's."
_SESSION: contextvars.ContextVar[str] = contextvars.ContextVar("action_session", default="anonymous")


def current_session() -> str:
    """The browser session of the bound action being handled: ``to_request``, ``show`` and ``stopped`` call it to
    keep what a session holds between actions (``backends.<capability>.sessions``)."""
    return _SESSION.get()


def _in_session(request, fn, *args):
    """``fn(*args)`` with ``current_session()`` naming ``request``'s session (set per call: Gradio may step a
    generator handler in a different context each time)."""
    reset = _SESSION.set(getattr(request, "session_hash", None) or "anonymous")
    try:
        return fn(*args)
    finally:
        _SESSION.reset(reset)


def bind_action(action: Action, *, trigger, inputs: Sequence[gr.components.Component],
                outputs: Sequence[gr.components.Component], status: gr.components.Component,
                to_request: Callable[..., Any], show: Callable[[Any, Any, dict[str, Path]], tuple],
                stop: gr.Button | None = None, stop_api_name: str | None = None,
                preview: gr.components.Component | Sequence[gr.components.Component] | None = None,
                to_preview: Callable[[Any], Any] = lambda item: item, running: str | Callable[[Any], str] = "Running…",
                stopped: str | Callable[[Any], tuple] = STOPPED, folder: Callable[[Any], Path] | None = None,
                api_name: str | None = None, status_output: bool = True, **listen_kwargs):
    """Wire ``trigger`` (a listener such as ``button.click``) to run ``action``; returns the dependency.

    ``to_request(*input values)`` makes the request (raise ``InputError`` to refuse it); ``show(request,
    result, paths)`` — or ``show(request, result, paths, input values)`` for display choices that are not
    part of the request — returns ``(status text, *values for the other outputs)``. The event's outputs are
    ``outputs`` in the order given, so an API keeps its order: ``status`` and ``preview`` may stand
    anywhere in it (where they are not in it, they go first: ``[preview?, status, *outputs]``); the values
    of ``show`` and ``stopped`` are for the outputs other than those two, in order (or for every output but
    the status, when the previews are outputs the result fills too). ``preview`` may be a list of
    components (a run that previews several things as it goes): ``to_preview`` then returns one value each. ``stopped`` is the status text after a Stop, or a function of the request giving
    ``(status text, *values)``. ``folder(request)`` is where the run is written (default: a new served
    output folder of the capability). ``stop`` gets the API name ``stop_api_name`` (default
    ``<capability>_stop``). With ``status_output=False`` the status line is not among the event's outputs (an
    API that has always returned only its results): it still shows progress and an error's note, and the
    status texts of ``show`` / ``stopped`` / ``running`` are dropped.
    """
    previews = [] if preview is None else list(preview) if isinstance(preview, list | tuple) else [preview]
    order = list(outputs)
    if status_output and not any(c is status for c in order):
        order.insert(0, status)
    for component in reversed(previews):
        if not any(c is component for c in order):
            order.insert(0, component)
    at_status = next((i for i, c in enumerate(order) if c is status), None)
    at_previews = [next(i for i, c in enumerate(order) if c is component) for component in previews]
    others = [i for i in range(len(order)) if i != at_status and i not in at_previews]
    all_but_status = [i for i in range(len(order)) if i != at_status]
    keep = (gr.update(),) * len(others)
    show_takes_inputs = len(inspect.signature(show).parameters) >= 4  # show(request, result, paths, input values)

    def row(text=None, pictures=None, rest=keep):
        """One value per output: the status text, the previews, the others in order (None: unchanged); a
        bare value when the event has one output (Gradio takes a 1-tuple for the value itself)."""
        out = [gr.update()] * len(order)
        if at_status is not None:
            out[at_status] = gr.update() if text is None else text
        for i, v in zip(at_previews, pictures or (), strict=False):
            out[i] = v
        # a result's values fill the outputs but the status and the previews, or (when the previews show
        # parts of the result, e.g. a curve that grows) every output but the status
        for i, v in zip(others if len(rest) == len(others) else all_but_status, rest, strict=True):
            out[i] = v
        return tuple(out) if len(out) > 1 else out[0]

    def preview_values(item) -> tuple:
        value = to_preview(item)
        return tuple(value) if len(previews) > 1 else (value,)

    def handler(*args):
        *inputs_given, request, progress = args
        token = CANCELS.start(request, action.name)  # first: a Stop pressed since the click is for this run
        try:
            req = _in_session(request, to_request, *inputs_given)
            yield row(running(req) if callable(running) else running)
            token.raise_if_cancelled()  # stopped before it started: no model is loaded for it
            for kind, item in stream(action.run(req, token), progress):
                if kind == "preview":
                    if previews:
                        yield row(pictures=preview_values(item))
                else:
                    where = folder(req) if folder is not None else new_output_dir(action.capability)
                    paths = action.write_run(req, item, where)
                    text, *rest = _in_session(request, show, req, item, paths, tuple(inputs_given)) \
                        if show_takes_inputs else _in_session(request, show, req, item, paths)
                    CANCELS.finish(request, action.name, token)  # before it is shown: a later Stop finds nothing
                    yield row(text, rest=rest)
        except Cancelled:
            text, *rest = _in_session(request, stopped, req) if callable(stopped) else (stopped, *keep)
            CANCELS.finish(request, action.name, token)  # before it is shown: a later Stop finds nothing running
            yield row(text, rest=rest)
        finally:
            CANCELS.finish(request, action.name, token)

    names = api_parameter_names(to_request, len(inputs))
    own = inspect.signature(to_request).parameters  # to_request's default None: the API may leave it out
    params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                default=own[n].default if n in own else inspect.Parameter.empty) for n in names]
    params += [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                                 annotation=gr.Request),
               inspect.Parameter("progress", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=gr.Progress())]
    handler.__signature__ = inspect.Signature(params)
    handler.__annotations__ = {"request": gr.Request}  # Gradio finds its special arguments by type hint
    handler.__name__ = f"on_{action.name}"
    handler.action_name = action.name  # app.contract finds the events that run an action by it
    handler.__doc__ = api_docstring(action.description or action.name, names, action.request_type, to_request)
    listen_kwargs.setdefault("concurrency_id", "gpu" if action.heavy else f"{action.capability}-light")
    for each in trigger if isinstance(trigger, list | tuple) else [trigger]:  # before the run: sent first
        each(_arm(action), queue=False, show_progress="hidden", api_visibility="private")
    dependency = listen(trigger, user_errors(handler), status=status, inputs=list(inputs), outputs=order,
                        api_name=api_name or action.name, **listen_kwargs)
    if stop is not None:
        bind_stop(stop, action, status, api_name=stop_api_name)
    return dependency


def _arm(action: Action) -> Callable:
    """The click's own unqueued event: the run is cancellable from the click on (``longwork.SessionCancels.arm``),
    so a Stop pressed while it waits in the queue or starts is not lost."""

    def arm(request: gr.Request) -> None:
        CANCELS.arm(request, action.name)

    arm.__name__ = f"arm_{action.name}"
    return arm


def api_parameter_names(to_request: Callable, count: int) -> list[str]:
    """The API's parameter names: ``to_request``'s own (a tab names them as its request's fields, or for what
    they are where an input is not a field). Inputs it cannot name (``*args``) are ``value_<i>``, which the API
    contract test (``app.contract.unnamed_parameters``) refuses."""
    found = [p.name for p in inspect.signature(to_request).parameters.values()
             if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    return [found[i] if i < len(found) else f"value_{i}" for i in range(count)]


def bind_stop(stop: gr.Button, action: Action | Sequence[Action], status: gr.components.Component,
              api_name: str | None = None) -> None:
    """``stop`` cancels this session's running ``action`` — or any of several (one Stop for a tab's actions) —
    unqueued: it never waits behind the work.

    The button answers in a toast ("Stopping…" or "Nothing is running.") and never writes the status line: the
    run writes "Stopped by the user" there itself, and an answer that arrived after it must not cover it (nor a
    late press the run's result). The API (``api_name``, default ``<capability>_stop``) answers in words.
    """
    actions = list(action) if isinstance(action, list | tuple) else [action]

    def cancel(request: gr.Request) -> bool:
        return any([CANCELS.cancel(request, a.name) for a in actions])  # a list: every action is cancelled

    def stop_running(request: gr.Request) -> str:
        return "Stopping…" if cancel(request) else NOTHING_RUNNING

    def on_stop_click(request: gr.Request) -> None:
        gr.Info("Stopping…" if cancel(request) else NOTHING_RUNNING)

    name = api_name or f"{actions[0].capability}_stop"
    stop_running.__name__ = f"on_{actions[0].name}_stop"
    stop_running.__doc__ = f"Stop this session's running {' / '.join(a.name for a in actions)}: 'Stopping…' or " \
                           f"'{NOTHING_RUNNING}'"
    on_stop_click.__name__ = f"on_{actions[0].name}_stop_click"
    # queued (toasts need the queue) but on no concurrency group, so it never waits behind the work
    stop.click(on_stop_click, api_visibility="private", concurrency_limit=None, show_progress="hidden")
    gr.api(stop_running, api_name=name, queue=False)
