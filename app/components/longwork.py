"""Run the backends' long work in a handler: progress bar, previews, and a Stop that really stops.

Backends yield :class:`ProgressEvent` and finally a result (see ``backends/common/progress.py``).
:func:`stream` maps the events to ``gr.Progress`` and hands previews and the result to the handler.
:class:`SessionCancels` keeps one cancel token per (browser session, action), so a Stop button
stops that user's work between two steps, also where Gradio's own ``cancels=`` could not (it only
stops a generator between its yields).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Any

import gradio as gr

from backends.common.progress import CancelToken, ProgressEvent


def stream(work: Iterable[Any], progress: gr.Progress | None) -> Iterator[tuple[str, Any]]:
    """Yield ``("preview", x)`` for each preview and ``("result", r)`` for the result."""
    for item in work:
        if isinstance(item, ProgressEvent):
            if progress is not None:
                progress(item.fraction, desc=item.message or None)
            if item.preview is not None:
                yield "preview", item.preview
        else:
            yield "result", item


class SessionCancels:
    """Cancel tokens keyed by (session, action); one live token per key."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], CancelToken] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(request: gr.Request | None, action: str) -> tuple[str, str]:
        return (getattr(request, "session_hash", None) or "anonymous", action)

    def start(self, request: gr.Request | None, action: str) -> CancelToken:
        token = CancelToken()
        with self._lock:
            self._tokens[self.key(request, action)] = token
        return token

    def finish(self, request: gr.Request | None, action: str, token: CancelToken) -> None:
        with self._lock:
            if self._tokens.get(self.key(request, action)) is token:
                del self._tokens[self.key(request, action)]

    def cancel(self, request: gr.Request | None, action: str) -> bool:
        with self._lock:
            token = self._tokens.get(self.key(request, action))
        if token is None:
            return False
        token.cancel()
        return True

    def __len__(self) -> int:
        return len(self._tokens)


CANCELS = SessionCancels()
