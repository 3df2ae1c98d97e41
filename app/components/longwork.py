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
    """Cancel tokens keyed by (session, action); one live token per key.

    A run is cancellable from the moment its button is clicked, not only once it has started: ``arm`` (called
    at the click, unqueued) marks the key's run as coming, and a Stop that arrives before the run's ``start``
    (it waits in the queue, or is still setting up) is kept and handed to it, so the run ends at its first
    step. A browser has at most one run of a button in flight (Gradio ignores a click while its event runs),
    so ``finish`` forgets whatever was armed for the key.
    """

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], CancelToken] = {}
        self._armed: dict[tuple[str, str], int] = {}  # clicks whose run has not started yet
        self._stop_before_start: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    @staticmethod
    def key(request: gr.Request | None, action: str) -> tuple[str, str]:
        return (getattr(request, "session_hash", None) or "anonymous", action)

    def arm(self, request: gr.Request | None, action: str) -> None:
        """The button of ``action`` was clicked: its run is coming (see the class's doc)."""
        key = self.key(request, action)
        with self._lock:
            if key not in self._tokens:
                self._armed[key] = self._armed.get(key, 0) + 1

    def start(self, request: gr.Request | None, action: str) -> CancelToken:
        """The run's token: already cancelled if a Stop came between its click and now."""
        token = CancelToken()
        key = self.key(request, action)
        with self._lock:
            if self._armed.get(key, 0) > 0:
                self._armed[key] -= 1
            if key in self._stop_before_start:
                self._stop_before_start.discard(key)
                token.cancel()
            self._tokens[key] = token
        return token

    def finish(self, request: gr.Request | None, action: str, token: CancelToken) -> None:
        key = self.key(request, action)
        with self._lock:
            if self._tokens.get(key) is token:
                del self._tokens[key]
                self._armed.pop(key, None)
                self._stop_before_start.discard(key)

    def cancel(self, request: gr.Request | None, action: str) -> bool:
        """Stop the key's run — the running one, or the one clicked and not started yet; whether there was one."""
        key = self.key(request, action)
        with self._lock:
            token = self._tokens.get(key)
            if token is None:
                if self._armed.get(key, 0) <= 0:
                    return False
                self._stop_before_start.add(key)
                return True
        token.cancel()
        return True

    def cancel_session(self, session_hash: str | None, reason: str = "the browser session ended") -> int:
        """Cancel every running job of one session; how many there were."""
        session_hash = session_hash or "anonymous"
        with self._lock:
            tokens = [t for (session, _), t in self._tokens.items() if session == session_hash]
            for key in [k for k in self._armed if k[0] == session_hash]:
                del self._armed[key]
            self._stop_before_start -= {k for k in self._stop_before_start if k[0] == session_hash}
        for token in tokens:
            token.cancel(reason)
        return len(tokens)

    def token(self, session_hash: str | None, action: str) -> CancelToken | None:
        """The running token of one session's ``action`` (None: not running)."""
        with self._lock:
            return self._tokens.get((session_hash or "anonymous", action))

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
