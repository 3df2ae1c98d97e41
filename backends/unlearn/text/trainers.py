"""SFD and the ESD baseline on the text-conditioned teacher: the label trainers' iteration (``trainers.py``, the
losses of ``losses.py`` unchanged), with prompts and box depths as conditions and the model's latent space.

* SFD: G and ψ are copies of the teacher's UNet; the teacher in SiD's and the forgetting loss is guided by CFG as
  the 3D Layout tab samples it. Remaining conditions: a prompt of the domain ("a <colour> <shape>") that does not
  name the forgotten word, over one box of its shape; forget conditions: a prompt that names it, and the teacher's
  condition is that prompt with the word replaced by the safe word over the same box (the SD side's rewrite,
  "brad pitt" → "a middle aged man").
* ESD (text form, Gandikota et al.): the student draws x_t by its own guided DDIM sampling of a forget prompt
  stopped at a random step; ε_θ*(x_t, c_w) is regressed onto ε(x_t, ∅) − η(ε(x_t, c_w) − ε(x_t, ∅)).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from backends.synth.layout_scenes import box_depth
from backends.synth.scene import SHAPES
from backends.unlearn.losses import esd_condition_loss
from backends.unlearn.schedule import ddim_timesteps, x0_from_eps
from backends.unlearn.trainers import ESDSettings, ESDTrainer, SFDSettings, SFDTrainer

from .conditions import one_box_scene
from .teacher import Cond, Guided, TextEps, TextTeacher
from .words import domain_prompts, names, prompt_class, replace_word

T_RANGE = (20, 980)  # the SD side's t range of SFD (run_sfd.sh)
BOXES_PER_SHAPE = 8  # box depths drawn once per shape; each condition picks one at random


@dataclass
class TextSettings:
    cfg: float = 5.0  # the 3D Layout tab's guidance scale for the embedded model
    boxes_per_shape: int = BOXES_PER_SHAPE
    esd_cfg: float = 3.0  # ESD's guidance while its student draws x_t (their train-esd.py's start_guidance)


class TextConditions:
    """Prompts and box depths of one forget choice, drawn from the trainer's generator."""

    def __init__(self, teacher: TextTeacher, forget: str, safe: str, boxes_per_shape: int, seed: int):
        domain = domain_prompts()
        self.remaining = [p for p in domain if not names(p, forget)]
        self.forget = [p for p in domain if names(p, forget)]
        self.safe = [replace_word(p, forget, safe) for p in self.forget]
        rng = np.random.default_rng(seed)
        depths = {s: np.stack([box_depth(one_box_scene(rng, f"a red {s}")) for _ in range(boxes_per_shape)])
                  for s in SHAPES}
        self.depth = {s: teacher.depth(d) for s, d in depths.items()}
        self.teacher = teacher
        self.null = teacher.encode([""])

    def _depths(self, prompts: list[str], gen: torch.Generator) -> torch.Tensor:
        out = []
        for p in prompts:
            pool = self.depth[prompt_class(p)[1]]
            out.append(pool[int(torch.randint(len(pool), (1,), generator=gen))])
        return torch.stack(out)

    def remain(self, n: int, gen: torch.Generator) -> Cond:
        prompts = [self.remaining[int(i)] for i in torch.randint(len(self.remaining), (n,), generator=gen)]
        return self.teacher.cond(prompts, self._depths(prompts, gen))

    def forget_pair(self, n: int, gen: torch.Generator) -> tuple[Cond, Cond]:
        idx = [int(i) for i in torch.randint(len(self.forget), (n,), generator=gen)]
        depth = self._depths([self.forget[i] for i in idx], gen)
        return (self.teacher.cond([self.forget[i] for i in idx], depth),
                self.teacher.cond([self.safe[i] for i in idx], depth))


def _copy(teacher: TextTeacher) -> TextEps:
    return TextEps(copy.deepcopy(teacher.eps.unet)).train().requires_grad_(True)


class TextSFDTrainer(SFDTrainer):
    """SFD's iteration (``SFDTrainer.step``) on the text teacher."""

    def __init__(self, teacher: TextTeacher, forget: str, safe: str, settings: SFDSettings, text: TextSettings,
                 seed: int = 0):
        self.s, self.text = settings, text
        self.forget, self.safe = forget, safe
        self.conds = TextConditions(teacher, forget, safe, text.boxes_per_shape, seed)
        self.teacher = Guided(teacher.eps, self.conds.null, text.cfg).eval().requires_grad_(False)
        self.psi, self.g = _copy(teacher), _copy(teacher)
        self.latent_shape = teacher.latent_shape
        self.opt_psi = torch.optim.Adam(self.psi.parameters(), lr=settings.lr_psi, betas=(0.0, 0.999))
        self.opt_g = torch.optim.Adam(self.g.parameters(), lr=settings.lr_g, betas=(0.0, 0.999))
        self.abar = teacher.abar
        self.gen = torch.Generator().manual_seed(seed)
        self.step_count = 0

    def _z(self, n):
        return torch.randn((n, *self.latent_shape), generator=self.gen)

    def _remain(self, n):
        return self.conds.remain(n, self.gen)

    def _forget_pair(self, n):
        return self.conds.forget_pair(n, self.gen)


class TextESDTrainer(ESDTrainer):
    """ESD's text form on the text teacher (a full fine-tune of the UNet, as the label baseline)."""

    def __init__(self, teacher: TextTeacher, forget: str, safe: str, settings: ESDSettings, text: TextSettings,
                 seed: int = 0):
        self.s, self.text = settings, text
        self.forget, self.safe = forget, safe
        self.conds = TextConditions(teacher, forget, safe, text.boxes_per_shape, seed)
        self.teacher = teacher.eps
        self.student = _copy(teacher)
        self.latent_shape = teacher.latent_shape
        self.opt = torch.optim.Adam(self.student.parameters(), lr=settings.lr)
        self.abar = teacher.abar
        self.gen = torch.Generator().manual_seed(seed)
        self.step_count = 0

    def step(self) -> dict[str, float]:
        s, n = self.s, self.s.batch
        ts = ddim_timesteps(s.ddim_steps)
        stop = int(torch.randint(len(ts), (1,), generator=self.gen))
        cf, _ = self.conds.forget_pair(n, self.gen)
        null = cf.with_emb(self.conds.null)
        x = torch.randn((n, *self.latent_shape), generator=self.gen)
        self.student.eval()
        guided = Guided(self.student, self.conds.null, self.text.esd_cfg)
        with torch.no_grad():
            for i in range(stop):
                tt = torch.full((n,), ts[i], dtype=torch.long)
                x0 = x0_from_eps(x, tt, guided(x, tt, cf), self.abar)
                a, a_next = self.abar[ts[i]], self.abar[ts[i + 1]]
                eps = (x - a.sqrt() * x0) / (1 - a).sqrt()
                x = a_next.sqrt() * x0 + (1 - a_next).sqrt() * eps
        self.student.train()
        t = torch.full((n,), ts[stop], dtype=torch.long)
        self.opt.zero_grad(set_to_none=True)
        loss = esd_condition_loss(self.student, self.teacher, x, t, cf, null, s.eta)
        loss.backward()
        self.opt.step()
        self.student.eval()
        self.step_count += 1
        return {"esd": loss.item()}


def text_sfd_settings(**kw) -> SFDSettings:
    """SFDSettings with the SD side's t range."""
    return SFDSettings(t_min=T_RANGE[0], t_max=T_RANGE[1], **kw)
