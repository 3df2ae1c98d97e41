"""Run the same function over many tasks: in this process, in local worker processes, or as Ray tasks.

Self-play tournaments and benchmark sweeps call :func:`run_tasks` with a module-level function and
plain-data tasks, so the results do not depend on where they ran. ``ray_address`` is a Ray cluster
address (``ray://host:10001``, ``auto``) or ``local`` to start Ray on this machine; Ray comes with the
``[dist]`` extra. Nothing here schedules work itself — the engines do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .errors import InputError
from .progress import check_cancelled


def run_tasks(fn: Callable[[Any], Any], tasks: Sequence[Any], ray_address: str | None = None,
              workers: int = 1, on_done: Callable[[int, int], None] | None = None) -> list:
    """``[fn(t) for t in tasks]``, in order, wherever it runs. ``on_done(done, total)`` is called as results
    come in (for progress); if it raises (a cancel), tasks not yet started are dropped and it propagates.
    A Stop of the work this runs for (``progress.check_cancelled``) is seen within 0.1 s while waiting
    for worker processes or Ray tasks: the processes are killed, the tasks cancelled."""
    tasks = list(tasks)
    done = on_done or (lambda k, n: None)
    if ray_address:
        return _ray_map(fn, tasks, ray_address, done)
    if workers > 1 and len(tasks) > 1:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, wait

        pool = ProcessPoolExecutor(min(workers, len(tasks)), mp_context=mp.get_context("spawn"))
        finished = False
        try:
            futures = [pool.submit(fn, t) for t in tasks]
            results = []
            for future in futures:
                while not wait([future], timeout=0.1).done:
                    check_cancelled()
                results.append(future.result())
                done(len(results), len(tasks))
            finished = True
            return results
        finally:
            if not finished:
                _kill_workers(pool)
            pool.shutdown(wait=True, cancel_futures=True)
    results = []
    for t in tasks:
        results.append(fn(t))
        done(len(results), len(tasks))
    return results


def _kill_workers(pool) -> None:
    """End a process pool's workers now (a stopped job's games must not run on): Python 3.14's
    ``kill_workers``, else the pool's process table."""
    kill = getattr(pool, "kill_workers", None)
    if kill is not None:
        kill()
        return
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        proc.kill()


def _ray_map(fn, tasks: list, address: str, done: Callable[[int, int], None]) -> list:
    try:
        import ray
    except ImportError:
        raise InputError("Ray is not installed: install the [dist] extra (pip install -e '.[dist]') "
                         "or leave the Ray address empty to run locally.") from None
    if not ray.is_initialized():
        kwargs = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        if address == "local":
            import os

            ray.init(num_cpus=os.cpu_count() or 1, **kwargs)
        else:
            ray.init(address=address, **kwargs)
    remote = ray.remote(fn)
    refs = [remote.remote(t) for t in tasks]
    results = []
    try:
        for ref in refs:
            while not ray.wait([ref], timeout=0.1)[0]:
                check_cancelled()
            results.append(ray.get(ref))
            done(len(results), len(tasks))
    except BaseException:
        for ref in refs[len(results):]:
            ray.cancel(ref, force=True)
        raise
    return results
