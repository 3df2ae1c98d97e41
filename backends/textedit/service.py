"""The Text in Image capability's results, the model loader and ``generate``.

Every action takes one request dataclass (``requests.py``, re-exported here) and yields
``ProgressEvent`` then one result dataclass (``generate`` here; ``localize``, ``edit``, ``protect``,
``finetune`` in their modules); ``actions.py`` wraps each as the one Action the tab, the API, the CLI
and the tests run, and its run card (``run.json``) reproduces it (``iclr25-studio replay``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from backends.common.imageio import to_uint8
from backends.common.modelbuild import cached_model
from backends.common.progress import CancelToken, ProgressEvent, relay, step_callback, stream_reports

from .loading import load_for
from .metrics import char_f1
from .models import DEFAULT_MODEL
from .ocr import ENGINES, read
from .requests import (  # noqa: F401 (re-exported: the requests' old home)
    DEFAULT_TEMPLATE,
    MAX_STEPS,
    MAX_TEMPLATE_CHARS,
    GenerateRequest,
    Sampling,
    check_template,
    check_text,
    prompt_for,
    rules_for,
)

PIPELINE_LOCK = threading.Lock()  # one model, one set of attention processors: calls run one at a time


@dataclass(frozen=True)
class Reading:
    """What one OCR engine read in an image, scored against the asked text (character level)."""

    engine: str
    text: str
    f1: float
    accuracy: int
    levenshtein: int

    def line(self) -> str:
        return f"{self.engine}: “{self.text}” — F1 {self.f1:.2f}, Levenshtein {self.levenshtein}"


def read_out(image: np.ndarray, asked: str, detect: bool, engines=ENGINES) -> list[Reading]:
    """Every engine's reading of ``image`` against ``asked`` (the primary engine first)."""
    out = []
    for engine in engines:
        got = read(image, engine, detect=detect).text
        s = char_f1(got, asked)
        out.append(Reading(engine, got, s.f1, s.accuracy, s.levenshtein))
    return out


@dataclass
class GenerateResult:
    image: np.ndarray  # H×W×3 uint8
    prompt: str
    readings: list[Reading]
    model: str
    device: str
    seconds: float


# --- models -----------------------------------------------------------------------------------
@cached_model(maxsize=2)
def _load(model_id: str, device: str):
    return load_for(model_id, device)


def load_pipeline(model_id: str = DEFAULT_MODEL):
    """(pipeline, preset, text rules) of a model, loaded once per process and device (one build at a time,
    a failed one not kept: ``backends.common.modelbuild``)."""
    from backends.common.device import select_device

    return _load(model_id, str(select_device()))


def model_info(model_id: str = DEFAULT_MODEL) -> tuple[str, list[str], int, int]:
    """What the model line says of a model (device, text layers, denoiser size, preset layers), its
    preset layers, steps and edit start step."""
    pipe, preset, _ = load_pipeline(model_id)
    denoiser = getattr(pipe, "denoiser", None) or pipe.unet
    total = sum(p.numel() for p in denoiser.parameters())
    layers = ", ".join(preset.edit_layers) or "none yet"
    info = (f"Model **{model_id}** on `{pipe.device}` · {len(pipe.layers)} text layers · denoiser "
            f"{total / 1e6:.2f} M parameters · localized layers: {layers} (source: {preset.source})")
    return info, list(preset.edit_layers), preset.num_inference_steps, preset.edit_start_step


# --- progress through the pipeline callback ----------------------------------------------------
class Reporter:
    """Turns a pipeline's ``callback_on_step_end`` into ``ProgressEvent``s for a share of a longer job."""

    def __init__(self, report: Callable[[ProgressEvent], None], preview_every: int = 4):
        self.report = report
        self.preview_every = preview_every

    def callback(self, start: float, end: float, label: str, preview: bool = True):
        def picture(pipe, step, n, tensors):
            x0 = tensors.get("pred_original_sample")
            return to_uint8(pipe.decode(x0[:1]))[0] if x0 is not None and hasattr(pipe, "decode") else None

        return step_callback(self.report, None, steps=_steps, start=start, end=end,
                             message=lambda pipe, step, n, _: f"{label} ({pipe.phase}, step {step})",
                             done=lambda pipe, step, n, _: (pipe.phase_index + step / n) / max(1, pipe.num_phases),
                             preview=picture if preview else None, preview_every=self.preview_every)

    def tensors(self) -> list[str]:
        return ["latents", "pred_original_sample"]


def _steps(pipe) -> int:
    sched = getattr(pipe, "scheduler", None) or getattr(getattr(pipe, "pipe", None), "scheduler", None)
    timesteps = getattr(sched, "timesteps", None)
    return len(timesteps) if timesteps is not None and len(timesteps) else 1


def call_kwargs(pipe, reporter: Reporter, start: float, end: float, label: str) -> dict:
    """The callback arguments of one pipeline call (previews only where the pipeline can decode x̂0)."""
    kw = {"callback_on_step_end": reporter.callback(start, end, label)}
    if hasattr(pipe, "decode"):
        kw["callback_on_step_end_tensor_inputs"] = reporter.tensors()
    return kw


def stream_action(work: Callable, cancel: CancelToken | None):
    """Run ``work(report)`` under the pipeline lock on a worker thread; yield its events, return its result.

    Use as ``result = yield from stream_action(work, cancel)`` inside an action's generator.
    """
    def locked(report):
        with PIPELINE_LOCK:
            return work(report)

    return (yield from relay(stream_reports(locked, cancel)))


# --- generate ----------------------------------------------------------------------------------
def generate(request: GenerateRequest, cancel: CancelToken | None = None,
             loaded=None) -> Iterator[ProgressEvent | GenerateResult]:
    """One image of the prompt ``<template> "<text>"``, with previews, and the OCR read-out.

    ``loaded``: the model's (pipeline, preset, rules) when the caller has them (an Action's ``load``)."""
    request.validate()
    t0 = time.perf_counter()
    yield ProgressEvent(0.0, f"loading {request.model}")
    pipe, _, rules = loaded or load_pipeline(request.model)

    def work(report):
        rep = Reporter(report)
        out = pipe(request.prompt, **request.pipe_kwargs(), **call_kwargs(pipe, rep, 0.0, 0.95, "generating"))
        return to_uint8(out.images)[0]

    image = yield from stream_action(work, cancel)
    readings = read_out(image, request.text, rules.ocr_detect)
    yield GenerateResult(image, request.prompt, readings, request.model, str(pipe.device), time.perf_counter() - t0)
