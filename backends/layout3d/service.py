"""The 3D Layout capability's entry points: one call per user action, shared by tab, API, CLI and tests.

* ``preview_depth(layout)`` — the cheap box-depth render of a layout (no model);
* ``run_scene(request)`` — the work of the scene action (``actions.SCENE``): the request's earlier
  layouts (or the live scene it continues, ``sessions.continued``), then its layout, stage by stage;
  a generator of ``ProgressEvent`` ending in a ``SceneResult`` (the stages, the new ones marked);
* ``start_scene(request)`` / ``edit_scene(session, layout)`` — the same for a caller that keeps the
  session itself (the benches);
* ``load_pipeline(model_id)`` — a model, loaded once per process and kept;
* ``warm_up(model_id)`` — load it and the ray caster ahead of the first action (the tab calls it
  on a background thread when the page opens, so the first *Generate* does not wait for them).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from backends.common.errors import InputError
from backends.common.modelbuild import cached_model
from backends.common.params import check_request
from backends.common.progress import CancelToken, ProgressEvent, relay, stream_reports
from backends.synth.scene import ROOMS

from .attention import DSAConfig
from .layout import Layout, preview_depth  # noqa: F401 (part of the capability's entry points)
from .loading import ModelDefaults, load_for
from .models import DEFAULT_MODEL
from .outputs import scene_card
from .pipeline import BuildAScenePipeline
from .requests import SceneRequest
from .sessions import continued, live_scenes
from .stages import SceneSession, Stage, StageSettings
from .vocabulary import MAX_CLOSED_VOCABULARY, check_layout_words, vocabulary_check  # noqa: F401 (entry point)

_LOCK = threading.Lock()  # one model, one set of attention processors: stages run one at a time
_WARMED: set[str] = set()


def stage_settings(request: SceneRequest, defaults: ModelDefaults) -> StageSettings:
    """The stages' settings of a request: its own, the model's defaults where it leaves them out."""
    s = StageSettings(
        num_inference_steps=int(request.num_inference_steps),
        guidance_scale=float(defaults.guidance_scale if request.guidance_scale is None else request.guidance_scale),
        seed=int(request.seed), method=request.method,
        blend_fraction=float(defaults.blend_fraction if request.blend_fraction is None else request.blend_fraction),
        dsa=DSAConfig(start_fraction=float(request.dsa_start_fraction), masking=request.dsa_masking),
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
    summary: dict = field(default_factory=dict)  # what the run card says of the scene (outputs.scene_card)
    session: SceneSession | None = None  # keep it to run the next stage

    @property
    def last(self) -> Stage:
        return self.stages[-1]

    def __reduce__(self):
        """Pickled (a result coming back from a Ray worker) without tensors: the stages' pictures, masks and
        layouts travel, the model and the denoising caches stay in the worker's scene store, where the next
        stage of this scene continues (``sessions.continued``); the whole weights never ride along."""
        light = [replace(st, cache=None, source_latents=None) for st in self.stages]
        return (SceneResult, (light, self.new, self.model, self.device, self.seconds, self.vocabulary_warning,
                              self.summary, light_session(self.session, light) if self.session is not None else None))


def light_session(session: SceneSession, stages: list[Stage]) -> SceneSession:
    """A copy of a scene for showing it (go back, masks, its run card) with no model or tensors."""
    light = copy.copy(session)
    light.pipe, light.noise, light._on_step, light.stages = None, None, None, list(stages)
    light.device = session.device
    return light


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


def run_scene(request: SceneRequest, models: tuple[BuildAScenePipeline, ModelDefaults] | None = None,
              cancel: CancelToken | None = None) -> Iterator[ProgressEvent | SceneResult]:
    """Reach the request's layout: from the live scene it continues when this process holds it, else from
    nothing through its earlier layouts (the same stages either way). Yields progress, then the result."""
    check_request(request)
    request.validate()
    t0 = time.perf_counter()
    session = continued(request)
    if session is not None:
        layouts = [request.target()]
    else:
        yield ProgressEvent(0.0, f"loading {request.model}")
        session = _new_session(request, models)
        layouts = request.layouts()
    yield from _run(session, layouts, cancel, t0, _vocab_warning(session.pipe, layouts[-1]), request.scene_key)


def start_scene(request: SceneRequest, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | SceneResult]:
    """Empty scene, then one stage per box (after the request's earlier layouts, if any)."""
    check_request(request)
    request.validate()
    t0 = time.perf_counter()
    yield ProgressEvent(0.0, f"loading {request.model}")
    session = _new_session(request)
    layouts = request.layouts()
    yield from _run(session, layouts, cancel, t0, _vocab_warning(session.pipe, layouts[-1]))


def edit_scene(session: SceneSession, layout: Layout, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | SceneResult]:
    """The next stage(s) of a scene the caller keeps: insert, change, move/resize/rotate or remove boxes."""
    if session is None or not session.stages:
        raise InputError("Generate a scene first; the next stage builds on it.")
    yield from _run(session, [layout], cancel, time.perf_counter(), _vocab_warning(session.pipe, layout))


def scene_request(session: SceneSession, layout: Layout | None = None, scene_key: str = "") -> SceneRequest:
    """The request that reaches ``layout`` from this scene (its model, settings and every stage's layout);
    without ``layout``, the request whose replay is the scene itself (its last stage after the others)."""
    if session.request is None:
        raise InputError("This scene was not made from a request; it cannot be continued or replayed.")
    layouts = [st.layout.to_dict() for st in session.stages]
    if layout is None:
        return replace(session.request, layout=layouts[-1], history=layouts[:-1], scene_key=scene_key)
    return replace(session.request, layout=layout.to_dict(), history=layouts, scene_key=scene_key)


def scene_result(session: SceneSession) -> SceneResult:
    """The scene as it is, as a result that made nothing new (what *Go back* shows and writes)."""
    return SceneResult(session.stages, [], session.model_id, session.device, 0.0, "", scene_card(session), session)


def _new_session(request: SceneRequest, models=None) -> SceneSession:
    pipe, defaults = models if models is not None else load_pipeline(request.model)
    session = SceneSession(pipe, stage_settings(request, defaults), defaults.size)
    session.model_id, session.request = request.model, request
    return session


def _run(session: SceneSession, layouts: list[Layout], cancel, t0, warning,
         key: str = "") -> Iterator[ProgressEvent | SceneResult]:
    """Reach each layout in turn; the stages stream their previews through ``callback_on_step_end``."""
    box = {"before": len(session.stages)}

    def work(report):
        with _LOCK:  # one model, one set of attention processors: stages run one at a time
            for layout in layouts:
                box["before"] = len(session.stages)
                session.edit(layout, report, cancel)

    yield from relay(stream_reports(work, cancel))
    if key:  # kept where it ran: the next stage of this scene continues it there (here, or on its Ray worker)
        live_scenes().put(key, session)
    stages = session.stages
    yield SceneResult(stages, list(range(box["before"], len(stages))), session.model_id, session.device,
                      time.perf_counter() - t0, warning, scene_card(session), session)


def _vocab_warning(pipe, layout: Layout) -> str:
    return check_layout_words(layout, _pipe_vocabulary(pipe)).message()
