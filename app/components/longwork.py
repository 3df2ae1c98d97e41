"""Run the backends' long work in a handler: progress bar, previews, and a Stop that really stops.

Backends yield :class:`ProgressEvent` and finally a result (see ``backends/common/progress.py``).
:func:`stream` maps the events to ``gr.Progress`` and hands previews and the result to the handler.
:class:`SessionCancels` keeps one cancel token per (browser session, action), so a Stop button
stops that user's work between two steps, also where Gradio's own ``cancels=`` could not (it only
stops a generator between its yields). When a browser session ends (the page closed, a client gone:
Gradio's ``unload``), :func:`end_session` cancels every job of that session, so none runs on for
nobody and each frees its queue slot.
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

    def cancel_session(self, session_hash: str | None, reason: str = "the browser session ended") -> int:
        """Cancel every running job of one session; how many there were."""
        with self._lock:
            tokens = [t for (session, _), t in self._tokens.items() if session == (session_hash or "anonymous")]
        for token in tokens:
            token.cancel(reason)
        return len(tokens)

    def running(self, session_hash: str | None) -> list[str]:
        """The actions of one session that hold a token (started and not finished)."""
        with self._lock:
            return [action for (session, action) in self._tokens if session == (session_hash or "anonymous")]

    def __len__(self) -> int:
        return len(self._tokens)


CANCELS = SessionCancels()


def end_session(request: gr.Request) -> None:
    """``demo.unload`` handler: the session's browser (or API client) is gone, so its jobs stop."""
    session = getattr(request, "session_hash", None)
    if session:  # never the "anonymous" jobs of other callers
        CANCELS.cancel_session(session)
