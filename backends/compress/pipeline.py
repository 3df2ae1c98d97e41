"""One compression from start to end, shared by the tab's action and the bench.

calibrate (Gram matrices of the original model, once per model/text/size) → plan → each group's SVD
→ optional coefficient refit → the compressed copy, with its sizes. The original is never modified.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import torch

from backends.common.progress import ProgressFn

from .calibrate import gram_matrices
from .plan import Plan, apply_plan, count_params, linear_params, make_plan, refit

DEFAULT_SHARED = ("q", "up", "gate")  # the authors' choice for their GQA model (Mistral-7B); SmolLM2 is GQA
DEFAULT_GROUP = 2  # every share2 config of theirs


@dataclass
class Compressed:
    model: torch.nn.Module
    plan: Plan
    seconds: float  # the SVDs (and refit); calibration is timed apart
    params: int
    linear_params: int
    bytes: int


def state_bytes(model) -> int:
    """Bytes of every distinct tensor (what the safetensors file holds, less its small header)."""
    seen, total = set(), 0
    for t in model.state_dict().values():
        key = (t.data_ptr(), tuple(t.shape))
        if key not in seen:
            seen.add(key)
            total += t.numel() * t.element_size()
    return total


def calibrate(model, pieces, cancel=None, report: ProgressFn | None = None):
    """(Gram matrices, seconds) for ``model`` over the calibration pieces."""
    t0 = time.perf_counter()
    grams = gram_matrices(model, pieces, cancel, report)
    return grams, time.perf_counter() - t0


def compress(original, method: str, ratio: float, grams, pieces, shared=DEFAULT_SHARED,
             group_size: int = DEFAULT_GROUP, do_refit: bool = False, cancel=None,
             report: ProgressFn | None = None) -> Compressed:
    """A compressed deep copy of ``original`` (ratio 0–1)."""
    plan = make_plan(original, method, ratio, shared, group_size, do_refit)
    t0 = time.perf_counter()
    model = copy.deepcopy(original)
    split = 0.7 if plan.refit else 1.0
    originals = apply_plan(model, plan, grams if method != "svd" else None, cancel,
                           report and (lambda f, m: report(f * split, m)))
    if plan.refit:
        refit(model, plan, originals, pieces, cancel, report and (lambda f, m: report(split + f * (1 - split), m)))
    seconds = time.perf_counter() - t0
    return Compressed(model.eval(), plan, seconds, count_params(model), linear_params(model), state_bytes(model))


def original_summary(model) -> dict:
    return {"params": count_params(model), "linear_params": linear_params(model), "bytes": state_bytes(model)}
