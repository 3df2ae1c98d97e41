"""Where an :class:`~backends.common.action.Action` runs: in this process (the default) or elsewhere.

An executor turns ``(action, request, cancel)`` into the work's events and result. The in-process one
calls the action directly; ``backends.common.ray_executor`` sends heavy actions to a Ray cluster
(``iclr25-studio serve --ray ADDRESS`` or ``ICLR25_RAY_ADDRESS``). Light actions always run here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from .progress import CancelToken, ProgressEvent

if TYPE_CHECKING:
    from .action import Action


class Executor(Protocol):
    def run(self, action: Action, request, cancel: CancelToken | None) -> Iterator[ProgressEvent | Any]: ...

    def where(self) -> str | None: ...


class InProcess:
    """Runs every action in this process (its model resident here)."""

    name = "in-process"

    def run(self, action: Action, request, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | Any]:
        return action.run_here(request, cancel)

    def where(self) -> str | None:
        """Where heavy work runs, when not on this process's device (None: here)."""
        return None


_lock = threading.Lock()
_current: Executor = InProcess()


def current_executor() -> Executor:
    return _current


def use_executor(executor: Executor) -> Executor:
    """Make ``executor`` the one every action goes through; returns the previous one."""
    global _current
    with _lock:
        previous, _current = _current, executor
    return previous
