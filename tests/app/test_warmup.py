"""A tab's warm-up runs once per process; handlers wait while the heavy packages are being imported
(under the build lock) instead of importing beside it, and do not wait once they are."""

import threading

from app.components import warmup
from app.components.errors import user_errors
from backends.common import modelbuild


def test_a_warm_up_runs_once_per_process():
    ran = threading.Event()
    assert warmup.warm_up_in_background("test-tab", ran.set)
    assert not warmup.warm_up_in_background("test-tab", ran.set)
    ran.wait()  # no deadline of ours: pytest-timeout guards a hang


class WatchedLock:
    """The build lock, telling when a thread has to wait for it and how often it was taken."""

    def __init__(self):
        self.lock = threading.RLock()
        self.waiting = threading.Event()
        self.taken = 0

    def __enter__(self):
        if not self.lock.acquire(blocking=False):
            self.waiting.set()
            self.lock.acquire()
        self.taken += 1
        return self

    def __exit__(self, *exc):
        self.lock.release()


def test_handlers_wait_for_a_running_preload_and_not_after(monkeypatch):
    monkeypatch.setattr(modelbuild, "_preloaded", set())  # as in a fresh process
    monkeypatch.setattr(modelbuild, "HEAVY_PACKAGES", ("torch",))
    monkeypatch.setattr(modelbuild, "LAZY_NAMES", {})
    monkeypatch.setattr(modelbuild, "LAZY_MODULES", ())
    monkeypatch.setattr(warmup, "PRELOAD", ("backends.common",))
    lock = WatchedLock()
    monkeypatch.setattr(modelbuild, "BUILD_LOCK", lock)
    log, holding, release = [], threading.Event(), threading.Event()

    def importing():  # another thread importing under the build lock, as the app's preload does
        with modelbuild.BUILD_LOCK:
            holding.set()
            release.wait()
            log.append("imported")

    @user_errors
    def handler():
        log.append("handler")

    threading.Thread(target=importing).start()
    holding.wait()
    t = threading.Thread(target=handler)
    t.start()
    lock.waiting.wait()  # the handler waits for the lock the imports hold (pytest-timeout guards a hang)
    assert log == []
    release.set()
    t.join()
    assert log == ["imported", "handler"]
    taken = lock.taken
    handler()  # imports done: it does not even take the lock
    assert lock.taken == taken and log[-1] == "handler"
