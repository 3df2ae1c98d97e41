"""A small heavy action for the executor tests: a Ray worker imports it by its module path.

It streams progress with array previews, returns arrays, keeps a "model" per process (to show that a
worker's model stays loaded between jobs), can take its time (to be stopped or killed mid-job), and can
fail with an error whose constructor does not take its message (``ModelMissingError``).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import numpy as np

from backends.common.action import Action
from backends.common.errors import Cancelled, InputError, ModelMissingError
from backends.common.progress import CancelToken, ProgressEvent
from backends.common.settings import get_settings

LOADS: list[int] = []  # one entry per model this process built
_MODEL: dict[str, np.ndarray] = {}


@dataclass
class ToyRequest:
    image: np.ndarray  # H×W×3 uint8
    steps: int = 4
    step_seconds: float = 0.0
    seed: int = 0
    fail: str = ""  # "missing": the model is missing

    def validate(self) -> None:
        if self.steps < 1:
            raise InputError(f"steps must be ≥ 1, got {self.steps}")


@dataclass
class ToyResult:
    picture: np.ndarray
    histogram: np.ndarray
    total: float
    pid: int  # the process that ran the work
    loads: int  # models built in that process so far
    where: dict  # the GPU Ray gave that process and the device setting it ran with


def _load(request: ToyRequest):
    if "weights" not in _MODEL:  # built once per process, as a capability's cached loader does
        LOADS.append(os.getpid())
        _MODEL["weights"] = 1.0 + 0.01 * np.random.default_rng(1234).normal(size=3).astype(np.float32)
    return _MODEL["weights"]


def _work(request: ToyRequest, weights, cancel: CancelToken | None):
    if request.fail == "missing":
        raise ModelMissingError("toy-model", ["nowhere/toy"], "it does not exist")
    rng = np.random.default_rng(request.seed)
    picture = request.image.astype(np.float32)
    for step in range(request.steps):
        if cancel is not None and (cancel.wait(request.step_seconds) if request.step_seconds else cancel.cancelled):
            raise Cancelled(cancel.reason)
        picture = np.clip(picture * weights + rng.normal(0, 4, picture.shape), 0, 255)
        yield ProgressEvent((step + 1) / request.steps, f"toy step {step + 1}/{request.steps}",
                            preview=picture.astype(np.uint8))
    out = picture.astype(np.uint8)
    where = {"cuda": os.environ.get("CUDA_VISIBLE_DEVICES", ""), "device": get_settings().device}
    yield ToyResult(out, np.bincount(out.ravel(), minlength=256), float(picture.sum()), os.getpid(), len(LOADS), where)


TOY = Action(name="toy_paint", capability="toy", request_type=ToyRequest, work=_work, load=_load,
             summary=lambda result: {"total": result.total}, description="a toy heavy action")


def toy_request(**changes) -> ToyRequest:
    image = (np.random.default_rng(5).random((12, 10, 3)) * 255).astype(np.uint8)
    return dataclasses.replace(ToyRequest(image=image, steps=4, seed=7), **changes)


def run_all(iterator) -> tuple[list[ProgressEvent], object]:
    """An action's events and its result."""
    events, result = [], None
    for item in iterator:
        if isinstance(item, ProgressEvent):
            events.append(item)
        else:
            result = item
    return events, result


def local_ray_executor(**resources):
    """A local Ray instance (2 CPUs, plus ``resources`` such as ``num_gpus``) and a RayExecutor on it, for a module
    fixture: yields the executor, then closes it and shuts Ray down."""
    import ray

    from backends.common.ray_executor import RayExecutor

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(address="local", num_cpus=2, include_dashboard=False, namespace="iclr25-studio-test", **resources)
    try:
        executor = RayExecutor()
        yield executor
        executor.close()
    finally:
        ray.shutdown()
