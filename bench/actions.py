"""The benches run a user action the way the tab, the API and the CLI do: through its :class:`Action`.

``run_action(name, request)`` finds the action by its API name in the catalog (``backends.action_named``),
iterates ``action.run(request)`` (the current executor's path: in this process unless a Ray executor was
chosen), and returns the typed result. The action validates the request and loads the model it names
(``action.load``, built once per process), so a bench's number is of the same work a user's click does.
``load_model(name, request)`` is that model, for a bench that loads it before it starts a clock.
"""

from __future__ import annotations

from typing import Any

from backends.common.progress import CancelToken, ProgressFn, run_to_result


def action(name: str):
    """The action whose API name is ``name`` (``InputError`` for an unknown one)."""
    import backends

    return backends.action_named(name)


def load_model(name: str, request) -> Any:
    """The model the action ``name`` runs ``request`` with (its ``load``: cached, so the run reuses it)."""
    return action(name).load(request)


def run_action(name: str, request, cancel: CancelToken | None = None, on_progress: ProgressFn | None = None) -> Any:
    """Run the action ``name`` on ``request`` to its end and return its result (its events go to
    ``on_progress(fraction, message)`` when given; ``cancel`` stops it as a Stop button does)."""
    return run_to_result(action(name).run(request, cancel), on_progress, cancel)
