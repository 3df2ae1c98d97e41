"""Sample and Evaluate on the text teacher: each prompt (repeated ``per_class`` times) over one box, the same noise
and box through the teacher (guided DDIM), SFD's one-step generator, the ESD model and negative guidance; 3D Layout's
detector reads each image's box; per method the numbers of ``metrics.py``."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from backends.common.errors import InputError
from backends.common.progress import ProgressEvent, raise_if_cancelled
from backends.unlearn.requests import NAMES, SHIPPED, EvaluateRequest

from .conditions import boxes_for, renders
from .loading import load_text_network
from .metrics import read_boxes, text_metrics
from .sampling import TextSamplers, draw_text, latent_noise
from .words import check_word_pair, names, parse_prompts

TEXT_METHOD_TITLES = {"teacher": "Teacher (guided DDIM)", "sfd": "SFD (one step)", "esd": "ESD fine-tune (DDIM)",
                      "negative_guidance": "Negative guidance (DDIM)"}


def text_shipped_id(method: str, forget: str, safe: str) -> str:
    return f"unlearn-text-{method}-{forget}-to-{safe}"


def text_ships(method: str, forget: str, safe: str) -> bool:
    from backends.common.registry import default_registry

    return text_shipped_id(method, forget, safe) in default_registry()


def resolve_text_network(spec: str, method: str, forget: str, safe: str, teacher_fp: str):
    """(network or None, its config, why it is left out or None) for 'shipped', 'none', a run id or a folder."""
    from backends.unlearn.loading import model_folder, network_config

    spec = (spec or "none").strip()
    if spec.lower() == "none":
        return None, {}, None
    if spec.lower() == SHIPPED:
        if not text_ships(method, forget, safe):
            return None, {}, (f"no {NAMES[method]} network of the text teacher ships for {forget} → {safe}; distil one "
                              "and give its run id")
        folder = model_folder(text_shipped_id(method, forget, safe))
    else:
        folder, _cfg = network_config(spec, method)
    net, cfg = load_text_network(folder, teacher_fp)
    if (cfg.get("forget"), cfg.get("safe")) != (forget, safe):
        raise InputError(f"{spec} was trained to forget {cfg.get('forget')} → {cfg.get('safe')}, not {forget} → {safe}.")
    return net, cfg, None


@dataclass
class TextEvaluateResult:
    forget: str
    safe: str
    methods: tuple[str, ...]
    prompts: list[str]  # one per image (each asked-for prompt repeated per_prompt times)
    images: dict[str, np.ndarray]  # method → N×64×64×3 uint8
    predictions: dict[str, np.ndarray]  # the detector's "colour shape" (or "nothing") per image
    confidences: dict[str, np.ndarray]
    seconds: dict[str, float]
    metrics: dict[str, dict] = field(default_factory=dict)
    teacher_steps: int = 20
    n_reference: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    teacher: str = "text"

    @property
    def asked(self) -> list[str]:
        """The distinct prompts, in order."""
        return list(dict.fromkeys(self.prompts))

    def to_json(self) -> dict:
        return dict(teacher="text", forget=self.forget, safe=self.safe, methods=list(self.methods), prompts=self.asked,
                    per_prompt=len(self.prompts) // max(len(self.asked), 1), teacher_steps=self.teacher_steps,
                    seconds_per_image=self.seconds, metrics=self.metrics, n_reference=self.n_reference,
                    skipped=self.skipped)


def evaluate_text(request: EvaluateRequest, models, cancel=None):
    teacher, teacher_fp, detector = models
    forget, safe = check_word_pair(request.forget, request.safe)
    asked = parse_prompts(request.prompts)
    nets, skipped, t_init = {}, {}, 625
    for m, spec in (("sfd", request.sfd_generator), ("esd", request.esd_model)):
        nets[m], cfg, why = resolve_text_network(spec, m, forget, safe, teacher_fp)
        if why:
            skipped[m] = why
        if m == "sfd" and cfg:
            t_init = cfg.get("t_init", t_init)
    if (request.salun_model or "").strip().lower() not in ("", "none", SHIPPED):
        raise InputError("SalUn is built for the shapes teacher only.")
    skipped["salun"] = "SalUn is built for the shapes teacher only"
    prompts = [p for p in asked for _ in range(request.per_class)]
    s = TextSamplers(teacher, forget, sfd=nets["sfd"], esd=nets["esd"], t_init=t_init,
                     teacher_steps=request.teacher_steps, cfg=request.guidance_scale, eta=request.eta,
                     forget_mask=torch.tensor([names(p, forget) for p in prompts]))
    methods = s.available()
    yield ProgressEvent(0.0, "box depth of every prompt's box")
    boxes = boxes_for(prompts, request.seed)
    cond = teacher.cond(prompts, teacher.depth(boxes.depth))
    z = latent_noise(teacher, len(prompts), request.seed)
    images, preds, confs, secs, feats = {}, {}, {}, {}, {}
    for i, m in enumerate(methods):
        raise_if_cancelled(cancel)
        yield ProgressEvent((i + 1) / (len(methods) + 2), f"sampling: {TEXT_METHOD_TITLES[m]}")
        images[m], sec = draw_text(s, m, cond, z, cancel.raise_if_cancelled if cancel is not None else None)
        secs[m] = sec / len(prompts)
        preds[m], confs[m], feats[m] = read_boxes(detector, images[m], boxes.boxes)
    metrics, n_ref = {}, 0
    if request.metrics:
        yield ProgressEvent((len(methods) + 1) / (len(methods) + 2), "metrics: the real objects in the same boxes")
        keep = [i for i, p in enumerate(prompts) if not names(p, forget)]
        ref_images = teacher.roundtrip(renders([boxes.scenes[i] for i in keep])) if keep else np.zeros((0, 64, 64, 3))
        _, _, ref = read_boxes(detector, ref_images, [boxes.boxes[i] for i in keep])
        n_ref = len(keep)
        for m in methods:
            metrics[m] = text_metrics(preds[m], feats[m], prompts, forget, ref, secs[m] * len(prompts))
    yield TextEvaluateResult(forget, safe, methods, prompts, images, preds, confs, secs, metrics,
                              request.teacher_steps, n_ref, skipped)
