"""The two trainable forgetting methods on one teacher: SFD (a one-step generator G and a fake score ψ, both
initialised from the teacher) and the ESD-style fine-tuning baseline (a copy of the teacher whose forget-class
score is regressed onto a negatively guided target). Each exposes ``step()`` → losses, and a state that can be
saved and resumed (``state_dict`` / ``load_state_dict``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from .generator import one_step
from .losses import esd_loss, fake_score_loss, sid_generator_loss
from .schedule import alphas_cumprod, ddim_timesteps, x0_from_eps


@dataclass
class SFDSettings:
    """The authors' CIFAR-10 config (``cifar10_sfd.yml``) except where noted (see docs/unlearn.md)."""

    alpha: float = 1.2
    t_init: int = 440
    t_min: int = 38
    t_max: int = 712
    lr_g: float = 1e-4  # paper 1e-5 for 50k iterations; here a few hundred, so 10×
    lr_psi: float = 1e-4
    g_remain_coef: float = 1.0
    g_forget_coef: float = 0.01
    sg_remain_coef: float = 1.0
    sg_forget_coef: float = 0.01
    grad_clip: float = 1.0  # clip by value, as theirs
    batch: int = 32  # paper 128


class SFDTrainer:
    """One iteration = one Adam step of ψ on fresh no-grad G samples (remaining classes, plus the forget class),
    then one Adam step of G on SiD (remaining classes) + the forgetting loss (c_f → c_s)."""

    method = "sfd"

    def __init__(self, teacher, forget: int, safe: int, settings: SFDSettings, seed: int = 0):
        self.s = settings
        self.teacher = teacher.eval().requires_grad_(False)
        self.psi = copy.deepcopy(teacher).train().requires_grad_(True)
        self.g = copy.deepcopy(teacher).train().requires_grad_(True)
        self.forget, self.safe = forget, safe
        self.remaining = torch.tensor([c for c in range(teacher.num_classes) if c != forget])
        self.opt_psi = torch.optim.Adam(self.psi.parameters(), lr=settings.lr_psi, betas=(0.0, 0.999))
        self.opt_g = torch.optim.Adam(self.g.parameters(), lr=settings.lr_g, betas=(0.0, 0.999))
        self.abar = alphas_cumprod()
        self.gen = torch.Generator().manual_seed(seed)
        self.step_count = 0

    def _t(self, n):
        return torch.randint(self.s.t_min, self.s.t_max, (n,), generator=self.gen)

    def _z(self, n):
        return torch.randn((n, 3, 32, 32), generator=self.gen)

    def _gen(self, z, y):
        return one_step(self.g, z, y, self.s.t_init, self.abar)

    def _remain(self, n):
        """Conditions of the remaining classes (the text teacher's trainer draws prompts and box depths instead)."""
        return self.remaining[torch.randint(len(self.remaining), (n,), generator=self.gen)]

    def _forget_pair(self, n):
        """(forget, safe) conditions: the safe one is what the teacher is asked in the forgetting loss."""
        return torch.full((n,), self.forget, dtype=torch.long), torch.full((n,), self.safe, dtype=torch.long)

    def step(self) -> dict[str, float]:
        s, n = self.s, self.s.batch
        c = self._remain(n)
        cf, cs = self._forget_pair(n)
        out = {}
        # ψ step
        self.psi.train().requires_grad_(True)
        self.opt_psi.zero_grad(set_to_none=True)
        with torch.no_grad():
            x0 = self._gen(self._z(n), c)
        loss = fake_score_loss(self.psi, x0, self._t(n), c, torch.randn(x0.shape, generator=self.gen), self.abar)
        (s.sg_remain_coef * loss).backward()
        out["psi_remain"] = loss.item()
        if s.sg_forget_coef > 0:
            with torch.no_grad():
                x0 = self._gen(self._z(n), cf)
            loss = fake_score_loss(self.psi, x0, self._t(n), cf, torch.randn(x0.shape, generator=self.gen), self.abar)
            (s.sg_forget_coef * loss).backward()
            out["psi_forget"] = loss.item()
        torch.nn.utils.clip_grad_value_(self.psi.parameters(), s.grad_clip)
        self.opt_psi.step()
        # G step (ψ frozen: gradients reach G through its samples only)
        self.psi.eval().requires_grad_(False)
        self.g.train()
        self.opt_g.zero_grad(set_to_none=True)
        x_g = self._gen(self._z(n), c)
        loss = sid_generator_loss(self.teacher, self.psi, x_g, self._t(n), c, c,
                                  torch.randn(x_g.shape, generator=self.gen), self.abar, s.alpha)
        (s.g_remain_coef * loss).backward()
        out["g_remain"] = loss.item()
        if s.g_forget_coef > 0:
            x_g = self._gen(self._z(n), cf)
            loss = sid_generator_loss(self.teacher, self.psi, x_g, self._t(n), cs, cf,
                                      torch.randn(x_g.shape, generator=self.gen), self.abar, s.alpha)
            (s.g_forget_coef * loss).backward()
            out["g_forget"] = loss.item()
        torch.nn.utils.clip_grad_value_(self.g.parameters(), s.grad_clip)
        self.opt_g.step()
        self.g.eval()
        self.step_count += 1
        return out

    @torch.no_grad()
    def sample(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self._gen(z, y).clamp(-1, 1)

    @property
    def model(self):
        """The network that ships: G."""
        return self.g

    def state_dict(self) -> dict:
        return dict(method=self.method, step=self.step_count, g=self.g.state_dict(), psi=self.psi.state_dict(),
                    opt_g=self.opt_g.state_dict(), opt_psi=self.opt_psi.state_dict(), gen=self.gen.get_state())

    def load_state_dict(self, st: dict) -> None:
        self.g.load_state_dict(st["g"])
        self.psi.load_state_dict(st["psi"])
        self.opt_g.load_state_dict(st["opt_g"])
        self.opt_psi.load_state_dict(st["opt_psi"])
        self.gen.set_state(st["gen"])
        self.step_count = st["step"]


@dataclass
class ESDSettings:
    """ESD (Gandikota et al.) as a label-conditional baseline: η = 1, x_t drawn by the student itself."""

    eta: float = 1.0
    lr: float = 1e-5  # ESD's fine-tuning rate
    ddim_steps: int = 20  # the partial sampling that yields x_t
    batch: int = 32


class ESDTrainer:
    """Fine-tunes a copy θ* of the teacher: x_t from θ*'s own c_f sampling stopped at a random DDIM step, then
    ‖ε_θ*(x_t, c_f) − (ε_θ(x_t,∅) − η(ε_θ(x_t,c_f) − ε_θ(x_t,∅)))‖²."""

    method = "esd"

    def __init__(self, teacher, forget: int, safe: int, settings: ESDSettings, seed: int = 0):
        self.s = settings
        self.teacher = teacher.eval().requires_grad_(False)
        self.student = copy.deepcopy(teacher).train()
        self.student.requires_grad_(True)
        self.forget, self.safe = forget, safe
        self.opt = torch.optim.Adam(self.student.parameters(), lr=settings.lr)
        self.abar = alphas_cumprod()
        self.gen = torch.Generator().manual_seed(seed)
        self.step_count = 0

    def step(self) -> dict[str, float]:
        s, n = self.s, self.s.batch
        ts = ddim_timesteps(s.ddim_steps)
        stop = int(torch.randint(len(ts), (1,), generator=self.gen))
        yf = torch.full((n,), self.forget, dtype=torch.long)
        x = torch.randn((n, 3, 32, 32), generator=self.gen)
        self.student.eval()
        with torch.no_grad():
            for i in range(stop):
                tt = torch.full((n,), ts[i], dtype=torch.long)
                x0 = x0_from_eps(x, tt, self.student(x, tt, yf), self.abar).clamp(-1, 1)
                a, a_next = self.abar[ts[i]], self.abar[ts[i + 1]]
                eps = (x - a.sqrt() * x0) / (1 - a).sqrt()
                x = a_next.sqrt() * x0 + (1 - a_next).sqrt() * eps
        self.student.train()
        t = torch.full((n,), ts[stop], dtype=torch.long)
        self.opt.zero_grad(set_to_none=True)
        loss = esd_loss(self.student, self.teacher, x, t, self.forget, self.teacher.null_label, s.eta)
        loss.backward()
        self.opt.step()
        self.student.eval()
        self.step_count += 1
        return {"esd": loss.item()}

    @property
    def model(self):
        return self.student

    def state_dict(self) -> dict:
        return dict(method=self.method, step=self.step_count, student=self.student.state_dict(),
                    opt=self.opt.state_dict(), gen=self.gen.get_state())

    def load_state_dict(self, st: dict) -> None:
        self.student.load_state_dict(st["student"])
        self.opt.load_state_dict(st["opt"])
        self.gen.set_state(st["gen"])
        self.step_count = st["step"]
