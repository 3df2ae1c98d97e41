"""Distil: train SFD's one-step generator (or the ESD or SalUn baseline) from the teacher — the label-conditional one of
the shapes, or the text-conditioned 3D Layout model (``text/``) — as a long, stoppable, resumable run. Every ``preview_every`` steps it yields the loss curves and a grid (one row per class, same noise); every
``checkpoint_every`` steps and on Stop it saves its whole state (``state.pt``) in the output folder, so a stopped
run continues with ``resume`` and, with the same seed, gives what an uninterrupted run would have.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from backends.common.errors import InputError
from backends.common.progress import ProgressEvent
from backends.synth.shape_images import CLASSES

from .classes import check_pair
from .requests import NAMES, DistilRequest
from .salun import SalUnSettings, SalUnTrainer
from .trainers import ESDSettings, ESDTrainer, SFDSettings, SFDTrainer

STATE = "state.pt"
NETWORK = "network"  # the trained network's folder inside the run folder
PREVIEW_PER_CLASS = 4


@dataclass
class DistilResult:
    method: str
    forget: str
    safe: str
    steps: int
    seconds: float
    losses: dict[str, list[float]]
    preview: np.ndarray  # uint8 grid
    network_dir: Path
    resumed_from: int = 0
    request: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        last = {k: (v[-1] if v else None) for k, v in self.losses.items()}
        return dict(method=self.method, forget=self.forget, safe=self.safe, steps=self.steps,
                    seconds=round(self.seconds, 2), resumed_from=self.resumed_from, last_losses=last)


def make_trainer(request: DistilRequest, teacher):
    if request.teacher == "text":
        return _text_trainer(request, teacher)
    f, s = check_pair(request.forget, request.safe)
    if request.method == "sfd":
        cfg = SFDSettings(alpha=request.alpha, t_init=request.t_init, lr_g=request.lr, lr_psi=request.lr,
                          g_forget_coef=request.forget_coef, sg_forget_coef=request.forget_coef, batch=request.batch)
        return SFDTrainer(teacher, f, s, cfg, seed=request.seed)
    if request.method == "esd":
        return ESDTrainer(teacher, f, s, ESDSettings(eta=request.eta, lr=request.lr, batch=request.batch), seed=request.seed)
    if request.method == "salun":
        cfg = SalUnSettings(mask_fraction=request.saliency_fraction, retain_coef=request.retain_coef, lr=request.lr,
                            batch=request.batch, pool_steps=request.replay_steps)
        return SalUnTrainer(teacher, f, s, cfg, seed=request.seed)
    raise InputError(f"unknown method {request.method!r} (sfd, esd or salun)")


PSI_LR_RATIO = 3.0  # text teacher: ψ learns 3× faster than G, as the SD side's 3e-6 / 1e-6 (run_sfd.sh)


def _text_trainer(request: DistilRequest, teacher):
    """SFD or ESD on the text teacher (the same request fields; SFD's t range and ψ's rate are the SD side's)."""
    from .text.trainers import TextESDTrainer, TextSettings, TextSFDTrainer, text_sfd_settings
    from .text.words import check_word_pair

    f, s = check_word_pair(request.forget, request.safe)
    if request.method == "sfd":
        cfg = text_sfd_settings(alpha=request.alpha, t_init=request.t_init, lr_g=request.lr, lr_psi=PSI_LR_RATIO * request.lr,
                                g_forget_coef=request.forget_coef, sg_forget_coef=request.forget_coef,
                                batch=request.batch)
        return TextSFDTrainer(teacher, f, s, cfg, TextSettings(), seed=request.seed)
    if request.method == "esd":
        return TextESDTrainer(teacher, f, s, ESDSettings(eta=request.eta, lr=request.lr, batch=request.batch),
                              TextSettings(), seed=request.seed)
    raise InputError(f"{request.method!r} is built for the shapes teacher only; on the text teacher: sfd or esd.")


def grid(images: np.ndarray, rows: int) -> np.ndarray:
    """uint8 N×H×W×3 → one image, ``rows`` rows (row-major)."""
    n, h, w, c = images.shape
    cols = n // rows
    return images[: rows * cols].reshape(rows, cols, h, w, c).transpose(0, 2, 1, 3, 4).reshape(rows * h, cols * w, c)


@torch.no_grad()
def preview(trainer, teacher, t_init: int) -> np.ndarray:
    """A grid: one row per class (text teacher: per preview prompt), the same noise in every preview (so rows change
    only as the network does)."""
    if getattr(teacher, "kind", "shapes") == "text":
        return _text_preview(trainer, teacher, t_init)
    from .sampling import Samplers, draw

    k = PREVIEW_PER_CLASS
    labels = torch.arange(len(CLASSES)).repeat_interleave(k)
    z = torch.randn((len(labels), 3, 32, 32), generator=torch.Generator().manual_seed(1234))
    if trainer.method == "sfd":
        s = Samplers(teacher, trainer.forget, sfd=trainer.model, t_init=t_init)
        imgs, _ = draw(s, "sfd", labels, z)
    else:  # ESD and SalUn: fine-tuned copies of the teacher, sampled like it
        s = Samplers(teacher, trainer.forget, teacher_steps=10, **{trainer.method: trainer.model})
        imgs, _ = draw(s, trainer.method, labels, z)
    return grid(imgs, len(CLASSES))


def _text_preview(trainer, teacher, t_init: int) -> np.ndarray:
    from .text.conditions import boxes_for
    from .text.sampling import TextSamplers, draw_text, latent_noise
    from .text.words import default_prompts, parse_prompts

    if getattr(trainer, "_preview", None) is None:  # the same boxes and noise in every preview
        prompts = [p for p in parse_prompts(default_prompts(trainer.forget)) for _ in range(PREVIEW_PER_CLASS)]
        boxes = boxes_for(prompts, 1234)
        trainer._preview = (teacher.cond(prompts, teacher.depth(boxes.depth)), latent_noise(teacher, len(prompts), 1234),
                            len(prompts) // PREVIEW_PER_CLASS)
    cond, z, rows = trainer._preview
    s = TextSamplers(teacher, trainer.forget, t_init=t_init, teacher_steps=10, **{trainer.method: trainer.model})
    imgs, _ = draw_text(s, trainer.method, cond, z)
    return grid(imgs, rows)


def save_network(trainer, folder: Path, request: DistilRequest, teacher_fp: str, seconds: float) -> None:
    extra = dict(method=trainer.method, teacher=teacher_fp, teacher_kind=request.teacher, forget=request.forget,
                 safe=request.safe,
                 t_init=request.t_init, steps=trainer.step_count, train_seconds=round(seconds, 1),
                 settings={k: v for k, v in _config_of(request).items() if k not in ("method", "forget", "safe")})
    if getattr(trainer, "mask", None) is not None:  # SalUn: the share of weights its saliency mask lets move
        extra["mask_share"] = round(trainer.mask_share(), 4)
    trainer.model.save(folder, extra)


SALUN_KEYS = ("saliency_fraction", "retain_coef", "replay_steps")


def _config_of(request: DistilRequest) -> dict:
    """The settings a checkpoint must be resumed with (SalUn's own only for SalUn: older SFD / ESD runs still resume)."""
    keys = ("method", "forget", "safe", "batch", "lr", "alpha", "t_init", "forget_coef", "eta", "seed")
    keys += SALUN_KEYS if request.method == "salun" else ()
    keys += ("teacher",) if request.teacher != "shapes" else ()  # older (shapes) runs still resume
    return {k: getattr(request, k) for k in keys}


def distil(request: DistilRequest, models, cancel=None):
    """The run's events (progress with loss curves and previews), then (yielded last) a :class:`DistilResult`."""
    teacher, teacher_fp = models
    out = Path(request.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    trainer = make_trainer(request, teacher)
    losses: dict[str, list[float]] = {}
    seconds, start_step = 0.0, 0
    state_path = out / STATE
    if request.resume:
        if not state_path.exists():
            raise InputError(f"There is no stopped run to resume in {out}.")
        st = torch.load(state_path, weights_only=False)
        if st["config"] != _config_of(request) or st["teacher"] != teacher_fp:
            raise InputError("That checkpoint was made with other settings or another teacher; resume it with the "
                             f"same ones ({st['config']}).")
        trainer.load_state_dict(st["trainer"])
        losses, seconds, start_step = st["losses"], st["seconds"], trainer.step_count
    t0 = time.perf_counter() - seconds

    def save():
        tmp = state_path.with_suffix(".tmp")
        torch.save(dict(trainer=trainer.state_dict(), losses=losses, seconds=time.perf_counter() - t0,
                        config=_config_of(request), teacher=teacher_fp), tmp)
        tmp.replace(state_path)
        save_network(trainer, out / NETWORK, request, teacher_fp, time.perf_counter() - t0)

    img = preview(trainer, teacher, request.t_init)
    yield ProgressEvent(start_step / request.iterations, f"{NAMES[trainer.method]}: step {start_step}",
                        preview={"grid": img, "losses": losses, "step": start_step})
    while trainer.step_count < request.iterations:
        if cancel is not None and cancel.cancelled:
            save()
            cancel.raise_if_cancelled()
        for k, v in trainer.step().items():
            losses.setdefault(k, []).append(float(v))
        step = trainer.step_count
        if step % request.checkpoint_every == 0:
            save()
        if step % request.preview_every == 0 or step == request.iterations:
            img = preview(trainer, teacher, request.t_init)
            msg = ", ".join(f"{k} {v[-1]:.3g}" for k, v in losses.items())
            yield ProgressEvent(step / request.iterations, f"{NAMES[trainer.method]}: step {step}/{request.iterations} ({msg})",
                                preview={"grid": img, "losses": losses, "step": step})
    save()
    (out / "losses.json").write_text(json.dumps(losses))
    yield DistilResult(trainer.method, request.forget, request.safe, trainer.step_count, time.perf_counter() - t0,
                        losses, img, out / NETWORK, start_step, _config_of(request))
