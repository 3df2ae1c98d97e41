"""glibc's freed heap goes back to the system when the server trims it (the soak's flat memory)."""

import sys
import threading
import time

import psutil
import pytest

from backends.common import memory

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or memory._glibc() is None,
                                reason="glibc only")


def test_memory_freed_by_a_worker_thread_is_returned_by_a_trim():
    process = psutil.Process()
    kept = []

    def churn():  # 1 KB objects are heap allocations (not mmap); the last one stays, so free() cannot
        blocks = [bytes(1000) for _ in range(150_000)]  # shrink the heap from its top: ~150 MB held, unused
        kept.append(blocks[-1])
        blocks.clear()

    def rss():
        time.sleep(0.5)  # the kernel's per-thread RSS counters catch up
        return process.memory_info().rss

    before = rss()
    worker = threading.Thread(target=churn)
    worker.start()
    worker.join()
    held = rss()
    assert held - before > 100 * 2**20, (before, held)  # without a trim, the freed memory stays resident
    assert memory.release_free_memory()
    after = rss()
    assert held - after > 0.8 * (held - before), (before, held, after)


def test_trimming_runs_once_per_process():
    assert memory.start_trimming(3600) is memory.start_trimming(3600)
