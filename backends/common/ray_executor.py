"""Heavy actions on a Ray cluster (``iclr25-studio serve --ray ADDRESS`` or ``ICLR25_RAY_ADDRESS``).

The app stays a thin front: every heavy :class:`~backends.common.action.Action` runs on a Ray actor, one
per (capability, device), whose models stay loaded between jobs; light actions run in this process.
Each GPU of the cluster is one device (a placement group holds one bundle per GPU, so the actors of a
device share its GPU); a cluster without GPUs is one CPU device. The app's "gpu" queue runs as many
jobs at once as there are devices (:attr:`RayExecutor.concurrency`), each on the least busy device.

A job is started on its actor (a thread there runs ``action.run_here`` with a :class:`CancelToken`)
and polled: each poll returns the events, previews and result produced so far, waiting up to
``POLL_S`` for one. Polling rather than a Ray streaming generator because Ray Client (``ray://``, how a
front outside the cluster connects) cannot stream generators. Stop cancels the job's token on the actor,
so the work stops at its next step as it does in-process. An actor that dies (killed, out of memory, its
node lost) is restarted by Ray (``max_restarts=-1``); its jobs are not retried (``max_task_retries=0``)
but fail with :class:`WorkerLost`, never hang.

Requests and results travel pickled: numpy arrays and dataclasses are fine. A ``Path`` in a request is
opened by the worker and the paths in a result by the app, so paths assume a file system shared by
the app and the cluster (or both on one machine). The workers import this project: every node needs
the same version of it installed.
"""

from __future__ import annotations

import importlib
import os
import pickle
import queue
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .errors import Cancelled, InputError, StudioError, WorkerLost  # noqa: F401 (WorkerLost re-exported)
from .progress import CancelToken, ProgressEvent

if TYPE_CHECKING:
    from .action import Action

POLL_S = 0.2  # the longest one poll waits: a Stop reaches the worker within about this
BATCH = 16  # items one poll returns at most
BACKLOG = 4  # items a job may run ahead of the app (previews can be big)
START_WAIT_S = 300.0  # a worker being created or restarted (a busy cluster, a large image) gets this long
ANSWER_WAIT_S = 120.0  # a worker that answers no poll for this long is taken as lost
MAX_CONCURRENCY = 16  # actor threads: polls and Stops get through while jobs run
LOST = "The worker running this job died (killed, out of memory or its machine lost); run it again."


class RayExecutor:
    """Runs heavy actions on Ray actors (one per capability and device), light ones in this process."""

    name = "ray"

    def __init__(self, address: str | None = None, **init_kwargs) -> None:
        """Connects to ``address`` (``auto``, ``host:6379``, ``ray://host:10001``) unless Ray is already
        initialised in this process (a test's local instance)."""
        import ray

        from .settings import get_settings

        if not ray.is_initialized():
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # as everywhere in the suite: nothing leaves
            init_kwargs.setdefault("namespace", "iclr25-studio")
            _check_reachable(address)
            try:
                ray.init(address=address, **init_kwargs)
            except (ConnectionError, ImportError, RuntimeError, ValueError) as e:
                raise InputError(f"Cannot use the Ray cluster at {address!r}: {e}") from e
        self._gpus = int(ray.cluster_resources().get("GPU", 0))
        self.devices = max(1, self._gpus)
        self.concurrency = self.devices  # the "gpu" queue's limit
        settings = get_settings()
        self._worker_settings = {"device": "cuda" if self._gpus else "cpu", "dtype": settings.dtype,
                                 "models_dir": str(settings.models_dir), "offline": settings.offline}
        self._lock = threading.Lock()
        self._actors: dict[tuple[str, int], Any] = {}
        self._busy = [0] * self.devices
        self._placement = None
        if self._gpus:
            from ray.util.placement_group import placement_group

            self._placement = placement_group([{"GPU": 1}] * self._gpus)
            try:
                ray.get(self._placement.ready(), timeout=START_WAIT_S)
            except ray.exceptions.GetTimeoutError as e:
                raise StudioError(f"Could not reserve the cluster's {self._gpus} GPUs in {START_WAIT_S:.0f} s "
                                  "(are other jobs holding them?).") from e

    # --- the Executor protocol -------------------------------------------------------------------
    def where(self) -> str | None:
        """What the page's device badge says: heavy work runs on the cluster's devices, not this process's."""
        device = self._worker_settings["device"]
        units = f"{self._gpus} GPU(s)" if self._gpus else "1 CPU worker per tab"
        return f"heavy work on a Ray cluster: {units} ({device}, {self._worker_settings['dtype']})"

    def run(self, action: Action, request, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | Any]:
        if not action.heavy:
            return action.run_here(request, cancel)
        from .params import check_request

        check_request(request)  # a refused request fails here, at once, as it does in-process
        validate = getattr(request, "validate", None)
        if callable(validate):
            validate()
        return self._remote(action, request, cancel)

    def worker(self, capability: str, device: int = 0):
        """The actor handle of ``capability`` on ``device`` (created on first use)."""
        key = (capability, device)
        with self._lock:
            if key not in self._actors:
                options: dict[str, Any] = dict(max_restarts=-1, max_task_retries=0, max_concurrency=MAX_CONCURRENCY)
                if self._placement is not None:
                    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

                    # a small share of the device's bundle: every capability's actor on that GPU fits
                    options.update(num_cpus=0, num_gpus=0.01, scheduling_strategy=PlacementGroupSchedulingStrategy(
                        self._placement, placement_group_bundle_index=device))
                self._actors[key] = _worker_class().options(**options).remote(self._worker_settings)
            return self._actors[key]

    def close(self) -> None:
        """End the actors and give the GPUs back (the app's exit does the same)."""
        import ray

        with self._lock:
            actors, self._actors = list(self._actors.values()), {}
        for actor in actors:
            ray.kill(actor, no_restart=True)
        if self._placement is not None:
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(self._placement)
            self._placement = None

    # --- one job ---------------------------------------------------------------------------------
    def _remote(self, action: Action, request, cancel: CancelToken | None) -> Iterator[ProgressEvent | Any]:
        device = self._take_device()
        try:
            actor = self.worker(action.capability, device)
            job = uuid.uuid4().hex
            done = False
            try:
                self._start(actor, job, action, request, cancel)
                told = False
                while not done:
                    if cancel is not None and cancel.cancelled and not told:
                        actor.cancel.remote(job, cancel.reason or "stopped by the user")
                        told = True
                    for kind, value in _answer(actor.take.remote(job, POLL_S), ANSWER_WAIT_S):
                        if kind == "item":
                            yield value
                            continue
                        done = True
                        if kind == "error":
                            raise _rebuild(value)
                        if kind == "lost":
                            raise WorkerLost(LOST)
                        break
            except WorkerLost:
                done = True
                raise
            finally:
                if not done:  # the app stopped listening (or an error here): the worker drops the job
                    _quietly(lambda: actor.cancel.remote(job, "the consumer stopped listening", True))
        finally:
            self._release_device(device)

    def _start(self, actor, job: str, action: Action, request, cancel: CancelToken | None) -> None:
        """Hand the job to its actor, waiting (Stop still works) while the actor starts or restarts."""
        import ray

        deadline = time.monotonic() + START_WAIT_S
        ref = actor.start.remote(job, action.name, _home(action), request)
        while True:
            ready, _ = ray.wait([ref], timeout=POLL_S)
            if ready:
                try:
                    _answer(ref, ANSWER_WAIT_S)
                    return
                except WorkerLost as e:
                    if time.monotonic() > deadline or getattr(e.__cause__, "actor_init_failed", False):
                        raise
                    # the actor was restarting (the previous job's worker died): hand it the job again
                    time.sleep(POLL_S)
                    ref = actor.start.remote(job, action.name, _home(action), request)
                    continue
            if cancel is not None and cancel.cancelled:
                _quietly(lambda: actor.cancel.remote(job, cancel.reason, True))
                raise Cancelled(cancel.reason or "stopped by the user")
            if time.monotonic() > deadline:
                _quietly(lambda: actor.cancel.remote(job, "no worker started", True))
                raise WorkerLost(f"No worker for this job started on the Ray cluster in {START_WAIT_S:.0f} s "
                                 "(not enough free resources?); run it again later.")

    def _take_device(self) -> int:
        with self._lock:
            device = min(range(self.devices), key=self._busy.__getitem__)
            self._busy[device] += 1
            return device

    def _release_device(self, device: int) -> None:
        with self._lock:
            self._busy[device] -= 1


def use_ray(address: str | None) -> RayExecutor:
    """Connect to the cluster at ``address`` and make every action go through it (``serve --ray``)."""
    from .executor import use_executor

    executor = RayExecutor(address)
    use_executor(executor)
    return executor


def _check_reachable(address: str | None, timeout: float = 5.0) -> None:
    """A HOST:PORT (or ray://HOST:PORT) that nothing answers is refused at once (Ray would wait for it for
    minutes); ``auto``, ``local`` and none are Ray's to find."""
    import socket

    if not address or address in ("auto", "local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"A Ray address is auto, HOST:PORT or ray://HOST:PORT, not {address!r}.")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        raise InputError(f"Nothing answers at {address} ({e.strerror or e}): is the Ray cluster started "
                         "(`ray start --head`), and is that its address?") from e


_remote_class = None


def _worker_class():
    """``RayWorker`` as a Ray actor class (made once: Ray exports a class per ``ray.remote``)."""
    global _remote_class
    if _remote_class is None:
        import ray

        _remote_class = ray.remote(RayWorker)
    return _remote_class


def _answer(ref, timeout: float):
    """``ray.get`` with the worker's death (or silence) as :class:`WorkerLost` and its own errors as themselves."""
    import ray
    from ray import exceptions as rex

    try:
        return ray.get(ref, timeout=timeout)
    except rex.RayTaskError as e:  # the actor's method raised (e.g. an unknown action): that error
        cause = getattr(e, "cause", None)
        if isinstance(cause, Exception) and not isinstance(cause, rex.RayError):
            raise cause from None
        first = str(cause or e).strip().splitlines()[0] if str(cause or e).strip() else type(e).__name__
        raise StudioError(f"The Ray worker could not run this job ({first}): does every machine of the cluster "
                          "have this project, the same version, installed?") from e
    except rex.GetTimeoutError as e:
        raise WorkerLost("The worker running this job stopped answering; run it again.") from e
    except (rex.RayActorError, rex.WorkerCrashedError, rex.NodeDiedError, rex.ObjectLostError,
            rex.LocalRayletDiedError) as e:
        if getattr(e, "actor_init_failed", False):
            raise WorkerLost(f"The worker for this job could not start on the Ray cluster: {e}") from e
        raise WorkerLost(LOST) from e


def _quietly(call) -> None:
    try:
        call()
    except Exception:  # noqa: BLE001 — a best-effort notice to a worker that may be gone
        pass


def _home(action: Action) -> str | None:
    """The module that defines ``action`` (a worker imports it when ``backends.action_named`` does not
    know the name, e.g. a test's action); None when none of its functions' modules holds it."""
    for fn in (action.work, action.load, action.write, action.summary):
        module = sys.modules.get(getattr(fn, "__module__", None) or "")
        if module is not None and any(a is action or a == action for a in _actions_in(module)):
            return module.__name__
    return None


def _actions_in(module) -> list:
    from .action import Action

    found = [v for v in vars(module).values() if isinstance(v, Action)]
    return found + [v for v in getattr(module, "ACTIONS", ()) if isinstance(v, Action)]


def find_action(name: str, module: str | None = None) -> Action:
    """The action called ``name``: from the suite's catalog, else from ``module``."""
    from backends import action_named

    try:
        return action_named(name)
    except InputError:
        if not module:
            raise
    for action in _actions_in(importlib.import_module(module)):
        if action.name == name:
            return action
    raise InputError(f"No action is called '{name}' in {module}.")


# --- the worker side ---------------------------------------------------------------------------------
class RayWorker:
    """The Ray actor of one (capability, device): runs jobs on threads, its models loaded once per process."""

    def __init__(self, settings: dict) -> None:
        from .settings import configure

        if settings.get("device") == "cpu":
            # Ray gives an actor without a CPU count one thread; a CPU device's jobs use the node's cores
            for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
                os.environ[name] = str(os.cpu_count() or 1)
        configure(**settings)
        self._jobs: dict[str, _Job] = {}
        self._dropped: set[str] = set()  # jobs cancelled for good before they reached this worker
        self._lock = threading.Lock()

    def pid(self) -> int:
        return os.getpid()

    def start(self, job_id: str, name: str, module: str | None, request) -> None:
        action = find_action(name, module)
        with self._lock:
            if job_id in self._dropped or job_id in self._jobs:
                self._dropped.discard(job_id)
                return
            job = self._jobs[job_id] = _Job()
        threading.Thread(target=job.run, args=(action, request), name=f"job-{job_id[:8]}", daemon=True).start()

    def take(self, job_id: str, wait_s: float = POLL_S) -> list[tuple[str, Any]]:
        """What the job produced since the last poll (waiting up to ``wait_s`` for something)."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:  # this worker does not know the job: it restarted since
            return [("lost", None)]
        items = job.take(wait_s)
        if items and items[-1][0] != "item":
            with self._lock:
                self._jobs.pop(job_id, None)
        return items

    def cancel(self, job_id: str, reason: str = "stopped by the user", forget: bool = False) -> bool:
        """Stop the job at its next step; ``forget``: nobody will poll it again, drop what it produces."""
        with self._lock:
            job = self._jobs.pop(job_id, None) if forget else self._jobs.get(job_id)
            if job is None and forget:
                self._dropped.add(job_id)
                if len(self._dropped) > 10_000:
                    self._dropped.clear()
        if job is None:
            return False
        if forget:
            job.gone.set()
        job.token.cancel(reason)
        return True


class _Job:
    """One job on a worker: its token, and what it produced that the app has not polled yet."""

    def __init__(self) -> None:
        self.token = CancelToken()
        self.items: queue.Queue = queue.Queue(maxsize=BACKLOG)
        self.gone = threading.Event()

    def run(self, action: Action, request) -> None:
        try:
            for item in action.run_here(request, self.token):
                if not self._put(("item", item)):
                    return
        except BaseException as e:  # noqa: BLE001 — handed to the app, which raises it there
            self._put(("error", _portable(e)))
        else:
            self._put(("end", None))

    def _put(self, item) -> bool:
        while not self.gone.is_set():
            try:
                self.items.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def take(self, wait_s: float) -> list[tuple[str, Any]]:
        try:
            items = [self.items.get(timeout=wait_s)]
        except queue.Empty:
            return []
        while len(items) < BATCH and items[-1][0] == "item":
            try:
                items.append(self.items.get_nowait())
            except queue.Empty:
                break
        return items


def _portable(exc: BaseException) -> tuple:
    """An exception as (class, args, attributes, remote traceback), which unpickles even when the class's
    ``__init__`` takes other arguments than its ``args`` (e.g. ``ModelMissingError``)."""
    text = "".join(traceback.format_exception(exc))
    parts = (type(exc), exc.args, dict(getattr(exc, "__dict__", {})), text)
    try:
        pickle.dumps(parts)
        return parts
    except Exception:  # noqa: BLE001 — an unpicklable class or attribute: its message still arrives
        return (StudioError, (f"{type(exc).__name__}: {exc}",), {}, text)


def _rebuild(parts: tuple) -> BaseException:
    cls, args, attributes, text = parts
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(attributes)
    exc.add_note("Raised on the Ray worker:\n" + text)
    return exc
