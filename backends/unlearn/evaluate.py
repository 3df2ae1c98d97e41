"""Sample and Evaluate: the same noise through the teacher (DDIM), SFD's one-step generator, the ESD and SalUn
models and the teacher with sampling-time negative guidance; the classifier reads every image; per method the forget rate,
the other classes' accuracy, a Fréchet distance on classifier features (against renders of the other classes)
and the seconds per image."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from backends.common.errors import InputError
from backends.common.progress import ProgressEvent, raise_if_cancelled
from backends.synth.shape_images import CLASSES

from .classes import check_pair
from .loading import check_teacher, generator_info, load_generator, model_folder, network_config
from .metrics import method_metrics, readings
from .requests import NAMES, SHIPPED, EvaluateRequest, is_run_id
from .sampling import METHOD_TITLES, Samplers, draw, noise


def shipped_id(method: str, forget: str, safe: str) -> str:
    return f"unlearn-{method}-{forget}-to-{safe}"


def ships(method: str, forget: str, safe: str) -> bool:
    """Whether a trained ``method`` network ships for this forget choice."""
    from backends.common.registry import default_registry

    return shipped_id(method, forget, safe) in default_registry()


def run_folder(run_id: str) -> Path:
    """The folder of Distil run ``run_id`` on this server (the tab names runs by id, never by path)."""
    from backends.common.runs import runs_root

    run_id = (run_id or "").strip().lower()
    if not is_run_id(run_id):
        raise InputError(f"{run_id[:40]!r} is not a run id (12 letters and digits, shown when Distil starts).")
    folder = runs_root() / "unlearn" / run_id
    if not folder.is_dir():
        raise InputError(f"There is no Distil run {run_id} on this server; press Distil to start one.")
    return folder


def resolve_network(spec: str, method: str, request: EvaluateRequest, teacher_fp: str):
    """(network or None, its config) for 'shipped', 'none' or a folder (a Distil run's folder or a network's)."""
    spec = (spec or "none").strip()
    if spec.lower() == "none":
        return None, {}
    if spec.lower() == SHIPPED:
        model_id = shipped_id(method, request.forget, request.safe)
        if not ships(method, request.forget, request.safe):
            raise InputError(f"No {NAMES[method]} network ships for {request.forget} → {request.safe}; distil one "
                             "(Distil) and give its folder, or choose a shipped pair.")
        folder = model_folder(model_id)
        cfg = generator_info(folder)
    else:
        folder, cfg = network_config(spec, method)
    check_teacher(cfg, "shapes", teacher_fp)  # a text-teacher network is refused as such, before its words are
    if (cfg.get("forget"), cfg.get("safe")) != (request.forget, request.safe):
        raise InputError(f"{spec} was trained to forget {cfg.get('forget')} → {cfg.get('safe')}, "
                         f"not {request.forget} → {request.safe}.")
    return load_generator(folder, teacher_fp)


@dataclass
class EvaluateResult:
    forget: str
    safe: str
    methods: tuple[str, ...]
    labels: np.ndarray  # N requested classes
    images: dict[str, np.ndarray]  # method → N×32×32×3 uint8
    predictions: dict[str, np.ndarray]
    confidences: dict[str, np.ndarray]
    seconds: dict[str, float]  # method → seconds per image
    metrics: dict[str, dict] = field(default_factory=dict)
    teacher_steps: int = 20
    n_reference: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # method → why it is not in this comparison

    def to_json(self) -> dict:
        return dict(forget=self.forget, safe=self.safe, methods=list(self.methods), per_class=int(len(self.labels) // len(CLASSES)),
                    teacher_steps=self.teacher_steps, seconds_per_image=self.seconds, metrics=self.metrics,
                    n_reference=self.n_reference, skipped=self.skipped)


def reference_features(classifier, forget: int, n: int) -> np.ndarray:
    """Classifier features of ``n`` held-out renders (test split) of every class but the forgotten one."""
    from backends.common.frechet import classifier_features
    from backends.common.settings import get_settings
    from backends.synth.shape_images import cached_split

    data = cached_split("test", Path(get_settings().models_dir) / "cache" / "shape-images", n, workers=1)
    keep = data["labels"] != forget
    return classifier_features(classifier, data["images"][keep])


def evaluate(request: EvaluateRequest, models, cancel=None):
    teacher, teacher_fp, classifier = models
    f, _ = check_pair(request.forget, request.safe)
    sfd, sfd_cfg = resolve_network(request.sfd_generator, "sfd", request, teacher_fp)
    esd, _ = resolve_network(request.esd_model, "esd", request, teacher_fp)
    salun, skipped = None, {}
    if request.salun_model.strip().lower() == SHIPPED and not ships("salun", request.forget, request.safe):
        skipped["salun"] = f"no SalUn network ships for {request.forget} → {request.safe}"
    else:
        salun, _ = resolve_network(request.salun_model, "salun", request, teacher_fp)
    s = Samplers(teacher, f, sfd=sfd, esd=esd, salun=salun, t_init=sfd_cfg.get("t_init", 440), teacher_steps=request.teacher_steps,
                 eta=request.eta)
    methods = s.available()
    labels = torch.arange(len(CLASSES)).repeat_interleave(request.per_class)
    z = noise(len(labels), request.seed)
    images, preds, confs, secs = {}, {}, {}, {}
    for i, m in enumerate(methods):
        raise_if_cancelled(cancel)
        yield ProgressEvent(i / (len(methods) + 1), f"sampling: {METHOD_TITLES[m]}")
        images[m], sec = draw(s, m, labels, z, cancel.raise_if_cancelled if cancel is not None else None)
        secs[m] = sec / len(labels)
        preds[m], confs[m] = readings(classifier, images[m])
    metrics, n_ref = {}, 0
    if request.metrics:
        yield ProgressEvent(len(methods) / (len(methods) + 1), "metrics: classifier features of held-out renders")
        n_ref = int(min(2000, max(100, 10 * request.per_class * len(CLASSES))))
        ref = reference_features(classifier, f, n_ref)
        for m in methods:
            raise_if_cancelled(cancel)
            metrics[m] = method_metrics(classifier, images[m], labels.numpy(), f, ref, secs[m] * len(labels))
    yield EvaluateResult(request.forget, request.safe, methods, labels.numpy(), images, preds, confs, secs, metrics,
                          request.teacher_steps, n_ref, skipped)
