"""The 3D Layout capability's entry points: one call per user action, shared by tab, API, CLI and tests.

* ``preview_depth(layout)`` — the cheap box-depth render of a layout (no model);
* ``start_scene(request)`` / ``edit_scene(session, layout)`` / ``replay_scene(stages_json)`` —
  generators of ``ProgressEvent`` ending in a ``SceneResult`` (the stages so far, the new ones
  marked, and the run card that ``outputs.write_scene`` saves as stages.json);
* ``load_pipeline(model_id)`` — a model, loaded once per process and kept;
* ``warm_up(model_id)`` — load it and the ray caster ahead of the first action (the tab calls it
  on a background thread when the page opens, so the first *Generate* does not wait for them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from backends.common.errors import InputError
from backends.common.modelbuild import cached_model
from backends.common.progress import CancelToken, ProgressEvent, stream_reports
from backends.common.seeding import check_seed
from backends.synth.scene import ROOMS

from .attention import DSAConfig
from .layout import Layout, preview_depth  # noqa: F401 (part of the capability's entry points)
from .loading import ModelDefaults, load_for
from .models import DEFAULT_MODEL, MODEL_CHOICES
from .outputs import scene_card
from .pipeline import BuildAScenePipeline
from .stages import METHODS, SceneSession, Stage, StageSettings
from .vocabulary import MAX_CLOSED_VOCABULARY, check_layout_words, vocabulary_check  # noqa: F401 (entry point)

_LOCK = threading.Lock()  # one model, one set of attention processors: stages run one at a time
_WARMED: set[str] = set()


@dataclass
class SceneRequest:
    layout: Layout
    model: str = DEFAULT_MODEL
    seed: int = 0
    num_inference_steps: int = 20
    guidance_scale: float | None = None  # None: the model's default
    method: str = "bas"
    blend_fraction: float | None = None  # None: the model's default (published 0.9; embedded 0.95)
    dsa_start_fraction: float = 0.5
    dsa_masking: str = "multiply"

    def validate(self) -> None:
        if self.model not in MODEL_CHOICES:
            raise InputError(f"Unknown model {self.model!r}; choose one of {', '.join(MODEL_CHOICES)}.")
        check_seed(self.seed)
        if self.method not in METHODS:
            raise InputError(f"Method must be one of {', '.join(METHODS)}.")
        if self.dsa_masking not in ("multiply", "neg_inf"):
            raise InputError("DSA masking must be 'multiply' (the published code) or 'neg_inf'.")
        if not 0.0 <= float(self.dsa_start_fraction) <= 1.0:
            raise InputError("The DSA start must be a fraction of the steps between 0 and 1.")

    def settings(self, defaults: ModelDefaults) -> StageSettings:
        s = StageSettings(
            num_inference_steps=int(self.num_inference_steps),
            guidance_scale=float(defaults.guidance_scale if self.guidance_scale is None else self.guidance_scale),
            seed=int(self.seed), method=self.method,
            blend_fraction=float(defaults.blend_fraction if self.blend_fraction is None else self.blend_fraction),
            dsa=DSAConfig(start_fraction=float(self.dsa_start_fraction), masking=self.dsa_masking),
        )
        s.validate()
        return s


@dataclass
class SceneResult:
    stages: list[Stage]
    new: list[int]  # indices of the stages this call made
    model: str
    device: str
    seconds: float
    vocabulary_warning: str = ""
    summary: dict = field(default_factory=dict)
    session: SceneSession | None = None  # keep it to run the next stage

    @property
    def last(self) -> Stage:
        return self.stages[-1]


@cached_model(maxsize=2)
def _load(model_id: str, device: str) -> tuple[BuildAScenePipeline, ModelDefaults]:
    return load_for(model_id, device)


def load_pipeline(model_id: str = DEFAULT_MODEL) -> tuple[BuildAScenePipeline, ModelDefaults]:
    """The model, built once per process (``backends.common.modelbuild``: a warm-up and a first action
    asking together build it once; a failed build is not kept)."""
    from backends.common.device import select_device

    return _load(model_id, str(select_device()))


def warm_up(model_id: str = DEFAULT_MODEL) -> float:
    """Load the model, run the first (slow) ray cast and two denoising steps now (the first call of a
    model pays for allocations and kernel choices); returns the seconds it took."""
    import torch

    t0 = time.perf_counter()
    pipe, defaults = load_pipeline(model_id)
    if model_id not in _WARMED:
        depth = Layout(ROOMS[0].prompt).with_size(defaults.size).depth()
        with _LOCK:
            pipe(ROOMS[0].prompt, torch.from_numpy(depth)[None, None], num_inference_steps=2, record=False,
                 generator=torch.Generator().manual_seed(0))
        _WARMED.add(model_id)
    return time.perf_counter() - t0


def unknown_words(pipe: BuildAScenePipeline, layout: Layout) -> list[str]:
    """Words of the prompts that the model's tokenizer does not know (the embedded model's vocabulary is small)."""
    return check_layout_words(layout, _pipe_vocabulary(pipe)).words


def _pipe_vocabulary(pipe: BuildAScenePipeline) -> frozenset[str] | None:
    tok = pipe.tokenizer
    if tok.unk_token_id is None or getattr(tok, "vocab_size", 10**6) > MAX_CLOSED_VOCABULARY:
        return None
    return frozenset(tok.get_vocab()) - set(tok.all_special_tokens)


def start_scene(request: SceneRequest, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | SceneResult]:
    """Empty scene, then one stage per box. Yields progress, then the result (which holds the session)."""
    request.validate()
    t0 = time.perf_counter()
    yield ProgressEvent(0.0, f"loading {request.model}")
    pipe, defaults = load_pipeline(request.model)
    session = SceneSession(pipe, request.settings(defaults), defaults.size)
    session.model_id = request.model
    warning = _vocab_warning(pipe, request.layout)
    yield from _run(session, [request.layout], cancel, t0, warning)


def edit_scene(session: SceneSession, layout: Layout, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | SceneResult]:
    """The next stage(s): insert, change, move/resize/rotate or remove boxes; earlier objects kept."""
    if session is None or not session.stages:
        raise InputError("Generate a scene first; the next stage builds on it.")
    yield from _run(session, [layout], cancel, time.perf_counter(), _vocab_warning(session.pipe, layout))


def replay_scene(card: dict, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | SceneResult]:
    """Rebuild a scene from its ``stages.json``: the same model and settings, stage by stage, same pixels."""
    model, settings, layouts = read_card(card)
    t0 = time.perf_counter()
    yield ProgressEvent(0.0, f"loading {model}")
    pipe, defaults = load_pipeline(model)
    session = SceneSession(pipe, settings, defaults.size)
    session.model_id = model
    yield from _run(session, layouts, cancel, t0, _vocab_warning(pipe, layouts[-1]))


def read_card(card: dict) -> tuple[str, StageSettings, list[Layout]]:
    """The model, settings and stage layouts of a ``stages.json``; InputError when it is not one."""
    try:
        model, raw, stages = card["model"], dict(card["settings"]), card["stages"]
        dsa = DSAConfig(**raw.pop("dsa"))
        settings = StageSettings(**raw, dsa=dsa)
        layouts = [Layout.from_json(st["layout"]) for st in stages]
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        if isinstance(e, InputError):
            raise
        raise InputError("That JSON is not a 3D Layout run card (stages.json with model, settings and stages).") from None
    if model not in MODEL_CHOICES:
        raise InputError(f"The run card names the model {model!r}; this suite knows {', '.join(MODEL_CHOICES)}.")
    if not layouts or layouts[0].boxes:
        raise InputError("A run card's first stage is the empty scene.")
    settings.validate()
    return model, settings, layouts


def _run(session: SceneSession, layouts: list[Layout], cancel, t0, warning) -> Iterator[ProgressEvent | SceneResult]:
    """Reach each layout in turn; the stages stream their previews through ``callback_on_step_end``."""
    before = len(session.stages)

    def work(report):
        with _LOCK:  # one model, one set of attention processors: stages run one at a time
            for layout in layouts:
                session.edit(layout, report, cancel)

    for item in stream_reports(work, cancel):
        if isinstance(item, ProgressEvent):
            yield item
    stages = session.stages
    yield SceneResult(stages, list(range(before, len(stages))), session.model_id, str(session.pipe.device),
                      time.perf_counter() - t0, warning, scene_card(session), session)


def _vocab_warning(pipe, layout: Layout) -> str:
    return check_layout_words(layout, _pipe_vocabulary(pipe)).message()
