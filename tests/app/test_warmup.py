"""A tab's warm-up runs once per process, and handlers wait for it instead of importing beside it."""

import threading
import time

from app.components import warmup
from app.components.errors import user_errors


def test_handlers_wait_for_a_running_warm_up_and_it_runs_once():
    log, release = [], threading.Event()

    def work():
        release.wait(5)
        log.append("warm")

    assert warmup.warm_up_in_background("test-tab", work)
    assert not warmup.warm_up_in_background("test-tab", work)  # once per process

    @user_errors
    def handler():
        log.append("handler")

    t = threading.Thread(target=handler)
    t.start()
    time.sleep(0.2)
    assert log == []  # the handler waits while the warm-up imports
    release.set()
    t.join(5)
    assert log == ["warm", "handler"]
    t0 = time.perf_counter()
    handler()  # no warm-up running: no wait
    assert time.perf_counter() - t0 < 0.1 and log[-1] == "handler"
