"""A small heavy action for the executor tests: a Ray worker imports it by its module path.

It streams progress with array previews, returns arrays, keeps a "model" per process (to show that a
worker's model stays loaded between jobs), can take its time (to be stopped or killed mid-job), and can
fail with an error whose constructor does not take its message (``ModelMissingError``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from backends.common.action import Action
from backends.common.errors import Cancelled, InputError, ModelMissingError
from backends.common.progress import CancelToken, ProgressEvent

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
    yield ToyResult(out, np.bincount(out.ravel(), minlength=256), float(picture.sum()), os.getpid(), len(LOADS))


TOY = Action(name="toy_paint", capability="toy", request_type=ToyRequest, work=_work, load=_load,
             summary=lambda result: {"total": result.total}, description="a toy heavy action")
