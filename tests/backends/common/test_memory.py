"""glibc's freed heap goes back to the system when the server trims it (the soak's flat memory)."""

import json
import subprocess
import sys

import pytest

from backends.common import memory

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or memory._glibc() is None,
                                reason="glibc only")

# In a process of its own (no trimmer running, glibc's default arenas): a worker thread allocates ~150 MB
# of 1 KB objects (heap, not mmap) and frees all but the last, so free() cannot shrink the heap from its top.
CHURN = """
import json, threading, time
import psutil
from backends.common import memory

def rss():
    time.sleep(0.5)  # the kernel's per-thread RSS counters catch up
    return psutil.Process().memory_info().rss

kept = []
def churn():
    blocks = [bytes(1000) for _ in range(150_000)]
    kept.append(blocks[-1])
    blocks.clear()

before = rss()
worker = threading.Thread(target=churn)
worker.start()
worker.join()
held = rss()
trimmed = memory.release_free_memory()
print(json.dumps([before, held, rss(), trimmed]))
"""


def test_memory_freed_by_a_worker_thread_is_returned_by_a_trim():
    out = subprocess.run([sys.executable, "-c", CHURN], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    before, held, after, trimmed = json.loads(out.stdout.strip().splitlines()[-1])
    assert held - before > 100 * 2**20, (before, held)  # without a trim, the freed memory stays resident
    assert trimmed and held - after > 0.8 * (held - before), (before, held, after)


def test_trimming_runs_once_per_process():
    assert memory.start_trimming(3600) is memory.start_trimming(3600)
