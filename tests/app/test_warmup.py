"""A tab's warm-up runs once per process; handlers wait while the heavy packages are being imported
(under the build lock) instead of importing beside it, and do not wait once they are."""

import threading
import time

from app.components import warmup
from app.components.errors import user_errors
from backends.common import modelbuild


def test_a_warm_up_runs_once_per_process():
    ran = threading.Event()
    assert warmup.warm_up_in_background("test-tab", ran.set)
    assert not warmup.warm_up_in_background("test-tab", ran.set)
    assert ran.wait(60)


def test_handlers_wait_for_a_running_preload_and_not_after(monkeypatch):
    monkeypatch.setattr(modelbuild, "_preloaded", set())  # as in a fresh process
    monkeypatch.setattr(modelbuild, "HEAVY_PACKAGES", ("torch",))
    monkeypatch.setattr(modelbuild, "LAZY_NAMES", {})
    monkeypatch.setattr(modelbuild, "LAZY_MODULES", ())
    monkeypatch.setattr(warmup, "PRELOAD", ("backends.common",))
    log, holding, release = [], threading.Event(), threading.Event()

    def importing():  # another thread importing under the build lock, as the app's preload does
        with modelbuild.BUILD_LOCK:
            holding.set()
            release.wait(5)
            log.append("imported")

    @user_errors
    def handler():
        log.append("handler")

    threading.Thread(target=importing).start()
    assert holding.wait(5)
    t = threading.Thread(target=handler)
    t.start()
    time.sleep(0.2)
    assert log == []  # the handler waits while the imports run
    release.set()
    t.join(30)
    assert log == ["imported", "handler"]
    t0 = time.perf_counter()
    handler()  # imports done: no wait
    assert time.perf_counter() - t0 < 0.1 and log[-1] == "handler"
