"""Load a tab's models on a background thread when the page opens, once per process.

The first import of torch, diffusers and transformers takes many seconds, and the lazy packages
are not safe to import for the first time from two threads at once (a cross-thread import cycle
hands one thread a half-initialised module: "cannot import name 'ModelMixin' from 'diffusers'").
So they are imported once, in one thread, under the process-wide build lock
(``backends.common.modelbuild.preload``): the app starts that before it serves, and a warm-up and
every handler wrapped by ``errors.user_errors`` wait for it (only in the first seconds of a process).
The models a warm-up loads are built under the same lock, so a first action never builds beside it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from backends.common.modelbuild import preload

log = logging.getLogger(__name__)
PRELOAD = ("backends",)  # imported before any handler runs
_started: set[str] = set()
_state = threading.Lock()


def wait_for_imports() -> None:
    """Return once the heavy packages and the backends are imported (at once when they are; a preload
    running on another thread is waited for; never imported beside it)."""
    try:
        preload(PRELOAD)
    except Exception:  # noqa: BLE001 — the handler's own import then says what is missing
        log.exception("importing the heavy packages failed")


def warm_up_in_background(name: str, work: Callable[[], object]) -> bool:
    """Run ``work`` (load models) on a daemon thread, the first time ``name`` asks; False if it already did.
    A failure is only logged: the user's first action reports it properly."""
    with _state:
        if name in _started:
            return False
        _started.add(name)

    def run():
        t0 = time.perf_counter()
        try:
            wait_for_imports()
            work()
            log.info("%s warmed up in %.1f s", name, time.perf_counter() - t0)
        except Exception:  # noqa: BLE001
            log.exception("%s warm-up failed", name)

    threading.Thread(target=run, name=f"{name}-warm-up", daemon=True).start()
    return True
