"""The Text in Image capability's typed requests and results, validated at the boundary, and ``generate``.

Every action takes one request dataclass and yields ``ProgressEvent`` then one result dataclass
(``generate`` here; ``localize``, ``edit``, ``protect``, ``finetune`` in their modules); the same
call serves the tab, the API, the CLI and the tests. A request is checked before any model loads:
empty or over-long text, characters the model cannot write, an unknown layer name (when the model is
loaded) → ``InputError`` with a sentence a person understands. Every result carries a run card (the
request, the model, the layers) that reproduces it through the CLI (``--card``) or the API.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from backends.common.errors import InputError
from backends.common.modelbuild import cached_model
from backends.common.progress import CancelToken, ProgressEvent, stream_reports
from backends.common.seeding import check_seed, torch_generator

from .loading import EMBEDDED_RULES, PUBLISHED_RULES, TextRules, load_for
from .metrics import char_f1
from .models import DEFAULT_MODEL, MODEL_CHOICES, PRESETS, Preset
from .networks import PROMPT_WORDS
from .ocr import ENGINES, read
from .pipeline import to_uint8

DEFAULT_TEMPLATE = "a sign that says"
MAX_TEMPLATE_CHARS = 80
MAX_STEPS = 100
PIPELINE_LOCK = threading.Lock()  # one model, one set of attention processors: calls run one at a time


def rules_for(model: str) -> TextRules:
    if model not in MODEL_CHOICES:
        raise InputError(f"Unknown Text in Image model {model!r}; choose one of {', '.join(MODEL_CHOICES)}.")
    return EMBEDDED_RULES if model == DEFAULT_MODEL else PUBLISHED_RULES


def check_text(text: str, model: str, what: str = "The text") -> str:
    """The text to write, stripped; ``InputError`` when the model cannot write it."""
    rules = rules_for(model)
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{what} is empty: type the word to write in the image.")
    text = text.strip()
    if len(text) > rules.max_chars:
        raise InputError(f"{what} has {len(text)} characters; this model writes at most {rules.max_chars}.")
    if '"' in text:
        raise InputError(f"{what} cannot contain double quotes (they delimit the text in the prompt).")
    probe = text.lower() if rules.case_insensitive else text
    bad = sorted({ch for ch in probe if ch not in rules.alphabet})
    if bad:
        shown = " ".join(repr(ch) for ch in bad)
        allowed = "the letters a–z" if rules is EMBEDDED_RULES else "printable ASCII characters"
        raise InputError(f"{what} has characters this model cannot write: {shown}. It writes {allowed}.")
    return text


def check_template(template: str, model: str) -> str:
    if not isinstance(template, str) or not template.strip():
        raise InputError("The prompt template is empty: write something like 'a sign that says'.")
    template = " ".join(template.split())
    if len(template) > MAX_TEMPLATE_CHARS:
        raise InputError(f"The prompt template has {len(template)} characters; keep it under {MAX_TEMPLATE_CHARS}.")
    if '"' in template:
        raise InputError("The prompt template cannot contain double quotes; the text is added in quotes after it.")
    if model == DEFAULT_MODEL:
        unknown = [w for w in re.split(r"[\s.,:]+", template.lower()) if w and w not in PROMPT_WORDS]
        if unknown:
            raise InputError(f"The embedded model does not know the words {', '.join(map(repr, unknown))}; "
                             f"its templates use: {', '.join(PROMPT_WORDS)}.")
    return template


def prompt_for(template: str, text: str) -> str:
    return f'{template} "{text}"'


@dataclass(kw_only=True)
class Sampling:
    """What every action shares: the model, the prompt template, the seed and the sampler settings."""

    model: str = DEFAULT_MODEL
    template: str = DEFAULT_TEMPLATE
    seed: int = 0
    num_inference_steps: int | None = None  # None: the model's preset
    guidance_scale: float | None = None

    def validate(self) -> None:
        rules_for(self.model)
        self.template = check_template(self.template, self.model)
        check_seed(self.seed)
        if self.num_inference_steps is not None and not 1 <= int(self.num_inference_steps) <= MAX_STEPS:
            raise InputError(f"Steps must be between 1 and {MAX_STEPS}, got {self.num_inference_steps}.")
        if self.guidance_scale is not None and not 1.0 <= float(self.guidance_scale) <= 30.0:
            raise InputError(f"Guidance scale must be between 1 and 30, got {self.guidance_scale}.")

    @property
    def preset(self) -> Preset:
        return PRESETS[self.model]

    @property
    def steps(self) -> int:
        return int(self.num_inference_steps or self.preset.num_inference_steps)

    @property
    def guidance(self) -> float:
        return float(self.preset.guidance_scale if self.guidance_scale is None else self.guidance_scale)

    def check_start(self, start: int | None, default: int) -> int:
        if start is None:
            return min(default, self.steps)  # the preset's start, within fewer steps than the preset's
        start = int(start)
        if not 0 <= start <= self.steps:
            raise InputError(f"The start step must be between 0 and the number of steps ({self.steps}); got {start}.")
        return start

    def pipe_kwargs(self) -> dict:
        """Sampler arguments of a pipeline call (a fresh generator: every call draws the seed's noise)."""
        return dict(num_inference_steps=self.steps, guidance_scale=self.guidance, generator=torch_generator(self.seed))

    @classmethod
    def from_dict(cls, values: dict):
        """A request from a run card's ``request`` (unknown keys are an error, not ignored)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise InputError(f"The run card has fields a {cls.__name__} does not take: {', '.join(unknown)}.")
        return cls(**values)


@dataclass(kw_only=True)
class GenerateRequest(Sampling):
    text: str

    def validate(self) -> None:
        super().validate()
        self.text = check_text(self.text, self.model)

    @property
    def prompt(self) -> str:
        return prompt_for(self.template, self.text)


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
    card: dict = field(default_factory=dict)


# --- models -----------------------------------------------------------------------------------
@cached_model(maxsize=2)
def _load(model_id: str, device: str):
    return load_for(model_id, device)


def load_pipeline(model_id: str = DEFAULT_MODEL):
    """(pipeline, preset, text rules) of a model, loaded once per process and device (one build at a time,
    a failed one not kept: ``backends.common.modelbuild``)."""
    from backends.common.device import select_device

    return _load(model_id, str(select_device()))


def run_card(action: str, request: Sampling, pipe, **extra) -> dict:
    """What reproduces a result: the action, its request, and what the model resolved it to."""
    return {"capability": "textedit", "action": action, "request": asdict(request), "model": request.model,
            "device": str(getattr(pipe, "device", "cpu")), "num_inference_steps": request.steps,
            "guidance_scale": request.guidance, "seed": request.seed, **extra}


# --- progress through the pipeline callback ----------------------------------------------------
class Reporter:
    """Turns a pipeline's ``callback_on_step_end`` into ``ProgressEvent``s for a share of a longer job."""

    def __init__(self, report: Callable[[ProgressEvent], None], preview_every: int = 4):
        self.report = report
        self.preview_every = preview_every

    def callback(self, start: float, end: float, label: str, preview: bool = True):
        def cb(pipe, i, t, tensors):
            n = _steps(pipe)
            done = (pipe.phase_index + (i + 1) / n) / max(1, pipe.num_phases)
            image = None
            x0 = tensors.get("pred_original_sample")
            if preview and x0 is not None and (i + 1) % self.preview_every == 0 and hasattr(pipe, "decode"):
                image = to_uint8(pipe.decode(x0[:1]))[0]
            self.report(ProgressEvent(start + (end - start) * min(1.0, done), f"{label} ({pipe.phase}, step {i + 1})",
                                      image))
            return {}

        return cb

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

    result = None
    for item in stream_reports(locked, cancel):
        if isinstance(item, ProgressEvent):
            yield item
        else:
            result = item
    return result


# --- generate ----------------------------------------------------------------------------------
def generate(request: GenerateRequest, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | GenerateResult]:
    """One image of the prompt ``<template> "<text>"``, with previews, and the OCR read-out."""
    request.validate()
    t0 = time.perf_counter()
    yield ProgressEvent(0.0, f"loading {request.model}")
    pipe, _, rules = load_pipeline(request.model)

    def work(report):
        rep = Reporter(report)
        out = pipe(request.prompt, **request.pipe_kwargs(), **call_kwargs(pipe, rep, 0.0, 0.95, "generating"))
        return to_uint8(out.images)[0]

    image = yield from stream_action(work, cancel)
    readings = read_out(image, request.text, rules.ocr_detect)
    yield GenerateResult(image, request.prompt, readings, request.model, str(pipe.device), time.perf_counter() - t0,
                         run_card("generate", request, pipe, prompts={"A": request.prompt}))
