"""Progress and cancellation: the small protocol between long backend work and whoever watches it.

Long work is a generator that yields :class:`ProgressEvent` (fraction, message, optional preview)
and, last, its typed result. It checks a :class:`CancelToken` between steps, so a Stop button — or a
CLI's Ctrl-C, or a test — really stops it. The app maps events to ``gr.Progress`` and previews; the
CLI prints them; tests just iterate. Work that reports through a callback instead (a diffusers
pipeline's ``callback_on_step_end``) becomes such a generator with :func:`stream_reports`.

One idiom: the token, handed down. Whatever can stop — a loop between its steps, a network call between its
blocks (``backends.common.interrupt``), a download between its chunks, a game's search between its batches, an
LLM between its tokens, a sandboxed strategy while it runs — is handed the run's token (``cancel``, or
``report.cancel`` inside :func:`stream_reports`) as an argument or an attribute of the object doing the work, and
checks it: ``cancel.raise_if_cancelled()``, or :func:`raise_if_cancelled` where the token may be None. There is no
ambient "current" token (no context variable) and no stop-flag callback polled by the work: code that was not
handed a token cannot be stopped, and says so by taking none (``tests/backends/common/test_cancellation_idiom.py``
keeps it so).
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from .errors import Cancelled

T = TypeVar("T")
ProgressFn = Callable[[float, str], None]


class CancelToken:
    """A flag set by the user's Stop, read by the worker between steps. A token made with a ``parent``
    is cancelled when the parent is (a job's own stop, e.g. its consumer going away, beside the user's)."""

    def __init__(self, parent: CancelToken | None = None) -> None:
        self._event = threading.Event()
        self.reason = ""
        self.parent = parent

    def cancel(self, reason: str = "stopped by the user") -> None:
        self.reason = reason
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set() or (self.parent is not None and self.parent.cancelled)

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled(self.reason or "cancelled")
        if self.parent is not None:
            self.parent.raise_if_cancelled()

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds, waking early on cancel; whether it is cancelled."""
        if self.parent is None:
            return self._event.wait(timeout)
        deadline = time.monotonic() + timeout
        while not self.cancelled and time.monotonic() < deadline:
            self._event.wait(min(0.05, max(0.0, deadline - time.monotonic())))
        return self.cancelled


def raise_if_cancelled(cancel: CancelToken | None) -> None:
    """``cancel.raise_if_cancelled()``, for code that may run with no token (None: nothing can stop it)."""
    if cancel is not None:
        cancel.raise_if_cancelled()


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


class Reporter:
    """What :func:`stream_reports` hands the work: call it with each event; ``cancel`` is the work's own token
    (a child of the caller's), for the checks the work makes between its reports."""

    def __init__(self, put: Callable[[tuple], bool], cancel: CancelToken) -> None:
        self._put = put
        self.cancel = cancel

    def __call__(self, event: ProgressEvent) -> None:
        self.cancel.raise_if_cancelled()
        if not self._put(("event", event)):
            raise Cancelled("the consumer stopped listening")


def stream_reports(work: Callable[[Reporter], T], cancel: CancelToken | None = None) -> Iterator[ProgressEvent | T]:
    """Run ``work(report)`` on a worker thread; yield each event it reports, then its result.

    This is how a diffusers pipeline, which reports through ``callback_on_step_end`` rather than by
    yielding, streams previews (the same pattern as transformers' ``TextIteratorStreamer``).
    ``report`` (a :class:`Reporter`) raises :class:`Cancelled` once ``cancel`` is set — or once the consumer
    stops iterating (closed, e.g. by a client that went away) — so the work stops at its next report, i.e.
    within a step; it waits while the consumer is two events behind. ``report.cancel`` is the token the work
    checks between its reports and hands down to whatever it calls (a child of ``cancel`` that the consumer going
    away cancels too).
    The consumer, once told to stop, waits for the worker to end: no work outlives its job.
    Exceptions of the work are re-raised in the consumer.
    """
    events: queue.Queue = queue.Queue(maxsize=2)
    token = CancelToken(parent=cancel)

    def put(item) -> bool:
        while not token._event.is_set():
            try:
                events.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    report = Reporter(put, token)

    def run() -> None:
        try:
            put(("result", work(report)))
        except BaseException as e:  # noqa: BLE001 — handed to the consumer, which re-raises it
            put(("error", e))

    worker = threading.Thread(target=contextvars.copy_context().run, args=(run,), name="stream-reports",
                              daemon=True)
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
        if not token._event.is_set():
            token.cancel("the consumer stopped listening")
        worker.join()


StepFn = Callable[[Any, int, int, dict], Any]  # (pipe, step 1..n, n, the callback's tensors) -> value


def step_callback(report: Report | None, cancel: CancelToken | None, *, steps: int | Callable[[Any], int],
                  message: StepFn, start: float = 0.0, end: float = 1.0, preview: StepFn | None = None,
                  preview_every: int = 1, done: StepFn | None = None) -> Callable:
    """The one bridge from a diffusers pipeline's ``callback_on_step_end`` to long work's events.

    After each step it stops the work if ``cancel`` is set (within a step), then reports a
    :class:`ProgressEvent` over ``[start, end]`` — ``done(...)`` (default ``step / n``) of the way — saying
    ``message(...)``, with ``preview(...)`` (an x̂0 picture; None for none) every ``preview_every`` steps and
    at the last one. ``steps`` is the loop's length, or a function of the pipeline that knows it."""

    def on_step_end(pipe, i, t, tensors):
        if cancel is not None:
            cancel.raise_if_cancelled()
        if report is not None:
            n = max(1, steps(pipe) if callable(steps) else steps)
            step = i + 1
            fraction = done(pipe, step, n, tensors) if done is not None else step / n
            show = preview is not None and (step % max(1, preview_every) == 0 or step == n)
            report(ProgressEvent(start + (end - start) * min(1.0, fraction), message(pipe, step, n, tensors),
                                 preview(pipe, step, n, tensors) if show else None))
        return {}

    return on_step_end


def relay(work: Iterable[Any]) -> Iterator[ProgressEvent]:
    """Pass long work's events on and return its result: ``result = yield from relay(work)`` inside another
    long-work generator (e.g. around :func:`stream_reports`)."""
    result = None
    for item in work:
        if isinstance(item, ProgressEvent):
            yield item
        else:
            result = item
    return result
