"""Load a tab's models on a background thread when the page opens, once per process.

The first import of torch, diffusers and transformers takes many seconds, and the lazy packages
are not safe to import for the first time from two threads at once (a cross-thread import cycle
hands one thread a half-initialised module: "cannot import name 'ModelMixin' from 'diffusers'").
So while a warm-up runs, handlers wrapped by ``errors.user_errors`` wait for it to finish — only
then, i.e. in the first seconds of a process — and import nothing alongside it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)
_IMPORTS = threading.Lock()  # held by a running warm-up
_started: set[str] = set()
_running = 0
_state = threading.Lock()


def warm_up_in_background(name: str, work: Callable[[], object]) -> bool:
    """Run ``work`` (load models) on a daemon thread, the first time ``name`` asks; False if it already did.
    A failure is only logged: the user's first action reports it properly."""
    global _running
    with _state:
        if name in _started:
            return False
        _started.add(name)
        _running += 1

    def run():
        global _running
        t0 = time.perf_counter()
        try:
            with _IMPORTS:
                work()
            log.info("%s warmed up in %.1f s", name, time.perf_counter() - t0)
        except Exception:  # noqa: BLE001
            log.exception("%s warm-up failed", name)
        finally:
            with _state:
                _running -= 1

    threading.Thread(target=run, name=f"{name}-warm-up", daemon=True).start()
    return True


def wait_for_warm_ups() -> None:
    """Block while a warm-up is importing (a no-op once they are done)."""
    if _running:
        with _IMPORTS:
            pass
