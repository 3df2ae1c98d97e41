"""Run the same function over many tasks: in this process, in local worker processes, or as Ray tasks.

Self-play tournaments and benchmark sweeps call :func:`run_tasks` with a module-level function and
plain-data tasks, so the results do not depend on where they ran. ``ray_address`` is a Ray cluster
address (``ray://host:10001``, ``auto``) or ``local`` to start Ray on this machine; Ray comes with the
``[dist]`` extra. Nothing here schedules work itself — the engines do.

The caller's Stop (its ``CancelToken``) reaches every task: in this process it is handed to ``fn``
(``fn(task, cancel=token)``, which hands it on to its search); worker processes and Ray tasks are ended
when it is cancelled (there ``fn(task)``: a killed process needs no token).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .errors import InputError
from .progress import CancelToken, raise_if_cancelled


def run_tasks(fn: Callable[..., Any], tasks: Sequence[Any], ray_address: str | None = None,
              workers: int = 1, on_done: Callable[[int, int], None] | None = None,
              cancel: CancelToken | None = None) -> list:
    """``[fn(t) for t in tasks]``, in order, wherever it runs. ``on_done(done, total)`` is called as results
    come in (for progress); if it raises, tasks not yet started are dropped and it propagates.
    ``cancel`` stops it all (Cancelled): in this process each task gets it (``fn(task, cancel=cancel)``) and
    stops inside; worker processes and Ray tasks are watched every 0.1 s and killed / cancelled."""
    tasks = list(tasks)
    done = on_done or (lambda k, n: None)
    if ray_address:
        return _ray_map(fn, tasks, ray_address, done, cancel)
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
                    raise_if_cancelled(cancel)
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
        raise_if_cancelled(cancel)
        results.append(fn(t, cancel=cancel))
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


def _ray_map(fn, tasks: list, address: str, done: Callable[[int, int], None], cancel: CancelToken | None) -> list:
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
                raise_if_cancelled(cancel)
            results.append(ray.get(ref))
            done(len(results), len(tasks))
    except BaseException:
        for ref in refs[len(results):]:
            ray.cancel(ref, force=True)
        raise
    return results
