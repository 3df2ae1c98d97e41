"""Progress and cancellation: the small protocol between long backend work and whoever watches it.

Long work is a generator that yields :class:`ProgressEvent` (fraction, message, optional preview)
and, last, its typed result. It checks a :class:`CancelToken` between steps, so a Stop button — or a
CLI's Ctrl-C, or a test — really stops it. The app maps events to ``gr.Progress`` and previews; the
CLI prints them; tests just iterate. Work that reports through a callback instead (a diffusers
pipeline's ``callback_on_step_end``) becomes such a generator with :func:`stream_reports`.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from .errors import Cancelled

T = TypeVar("T")
ProgressFn = Callable[[float, str], None]


class CancelToken:
    """A flag set by the user's Stop, read by the worker between steps."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""

    def cancel(self, reason: str = "stopped by the user") -> None:
        self.reason = reason
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled(self.reason or "cancelled")


@dataclass
class ProgressEvent:
    """One step of long work: how far (0..1), what is happening, and optionally something to show."""

    fraction: float
    message: str = ""
    preview: Any = None

    def __post_init__(self):
        self.fraction = min(1.0, max(0.0, float(self.fraction)))


def run_to_result(work: Iterable[Any], on_progress: ProgressFn | None = None,
                  cancel: CancelToken | None = None) -> Any:
    """Drive a long-work generator to its end and return its result (the last non-event item).

    ``on_progress`` receives every event's fraction and message; ``cancel`` is checked between steps.
    """
    result = None
    for item in work:
        if cancel is not None:
            cancel.raise_if_cancelled()
        if isinstance(item, ProgressEvent):
            if on_progress is not None:
                on_progress(item.fraction, item.message)
        else:
            result = item
    return result


def track(items: Iterable[T], total: int, cancel: CancelToken | None, message: str = "",
          start: float = 0.0, end: float = 1.0) -> Iterator[tuple[T, ProgressEvent]]:
    """Pair each item with the event that reports it done, checking ``cancel`` before each one.

    The fraction runs from ``start`` to ``end`` so a stage of a longer job can report its share.
    """
    total = max(1, total)
    for i, item in enumerate(items):
        if cancel is not None:
            cancel.raise_if_cancelled()
        label = f"{message} {i + 1}/{total}".strip()
        yield item, ProgressEvent(start + (end - start) * (i + 1) / total, label)


Report = Callable[[ProgressEvent], None]


def stream_reports(work: Callable[[Report], T], cancel: CancelToken | None = None) -> Iterator[ProgressEvent | T]:
    """Run ``work(report)`` on a worker thread; yield each event it reports, then its result.

    This is how a diffusers pipeline, which reports through ``callback_on_step_end`` rather than by
    yielding, streams previews (the same pattern as transformers' ``TextIteratorStreamer``).
    ``report`` raises :class:`Cancelled` once ``cancel`` is set — or once the consumer stops
    iterating — so the work stops at its next report, i.e. within a step; it waits while the
    consumer is two events behind. Exceptions of the work are re-raised in the consumer.
    """
    events: queue.Queue = queue.Queue(maxsize=2)
    closed = threading.Event()

    def put(item) -> bool:
        while not closed.is_set():
            try:
                events.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def report(event: ProgressEvent) -> None:
        if cancel is not None:
            cancel.raise_if_cancelled()
        if not put(("event", event)):
            raise Cancelled("the consumer stopped listening")

    def run() -> None:
        try:
            put(("result", work(report)))
        except BaseException as e:  # noqa: BLE001 — handed to the consumer, which re-raises it
            put(("error", e))

    worker = threading.Thread(target=run, name="stream-reports", daemon=True)
    worker.start()
    try:
        while True:
            kind, value = events.get()
            if kind == "error":
                raise value
            yield value
            if kind == "result":
                return
    finally:
        closed.set()
        worker.join()
