"""SalUn (Fan et al., ICLR 2024) as a further fine-tuning baseline on the same teacher: saliency-masked unlearning
for a label-conditional DDPM.

1. A weight-saliency mask: the gradient of the forgetting loss (the DDPM loss on the forget class) accumulated over
   the forget samples; the top ``mask_fraction`` of all weights by |gradient| (their default 0.5) are the only ones
   that move.
2. Fine-tuning those weights on the random-label (remap) loss — ε_θ(x_t, c_f) onto the model's own detached
   ε_θ(x_t, c_s), the safe class here — plus ``retain_coef`` × the DDPM loss on the other classes (their α = 1e-3).

Data-free, as the other methods here: the forget and retain samples are the teacher's own (DDIM), drawn once into
a pool at the start of the run (Selective Amnesia's generative replay, on which SalUn's DDPM code builds).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from .losses import denoising_loss, salun_forget_loss
from .schedule import T, alphas_cumprod, ddim_sample


@dataclass
class SalUnSettings:
    """The authors' ``cifar10_saliency_unlearn.yml`` and README command except where noted (docs/unlearn.md)."""

    mask_fraction: float = 0.5  # top share of weights by |∇ forgetting loss|
    retain_coef: float = 1e-3  # their --alpha: weight of the retain (DDPM) loss
    lr: float = 1e-4  # Adam, β = (0.9, 0.999), as theirs
    grad_clip: float = 1.0  # by norm, before masking, as theirs
    label_dropout: float = 0.1  # their cond_drop_prob on the retain loss (the teacher was trained with it)
    batch: int = 32  # theirs 128
    pool_per_class: int = 0  # teacher samples per class in the replay pool; 0: 2 × batch
    pool_steps: int = 20  # DDIM steps of the teacher for the pool


def antithetic_t(n: int, gen: torch.Generator) -> torch.Tensor:
    """Timesteps t and T−1−t in pairs, as their DDPM code draws them."""
    t = torch.randint(0, T, (n // 2 + 1,), generator=gen)
    return torch.cat([t, T - 1 - t])[:n]


@torch.no_grad()
def teacher_pool(teacher, per_class: int, steps: int, seed: int, chunk: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """(images in [-1, 1], labels): ``per_class`` DDIM samples of the teacher for every class."""
    gen = torch.Generator().manual_seed(seed)
    abar = alphas_cumprod()
    labels = torch.arange(teacher.num_classes).repeat_interleave(per_class)
    out = []
    for y in labels.split(chunk):
        z = torch.randn((len(y), 3, 32, 32), generator=gen)
        out.append(ddim_sample(lambda xt, t, y=y: teacher(xt, t, y), z, steps, abar))
    return torch.cat(out), labels


def saliency_mask(net, x0: torch.Tensor, forget: int, fraction: float, batch: int, gen: torch.Generator,
                  abar: torch.Tensor) -> dict[str, torch.Tensor]:
    """name → bool mask: the top ``fraction`` of all weights (ranked together) by the |gradient| of the DDPM loss
    on the forget samples ``x0``, accumulated over the batches."""
    params = dict(net.named_parameters())
    acc = {k: torch.zeros_like(p) for k, p in params.items()}
    for xb in x0.split(batch):
        net.zero_grad(set_to_none=True)
        n = len(xb)
        loss = denoising_loss(net, xb, antithetic_t(n, gen), torch.full((n,), forget, dtype=torch.long),
                              torch.randn(xb.shape, generator=gen), abar)
        loss.backward()
        for k, p in params.items():
            if p.grad is not None:
                acc[k] += p.grad.abs()
    net.zero_grad(set_to_none=True)
    flat = torch.cat([v.flatten() for v in acc.values()])
    k = max(1, min(len(flat), round(fraction * len(flat))))
    threshold = torch.topk(flat, k, sorted=True).values[-1]
    mask, left = {}, k  # ties at the threshold: keep exactly k, first come first kept
    for name, v in acc.items():
        m = v > threshold
        left -= int(m.sum())
        mask[name] = m
    for name, v in acc.items():
        if left <= 0:
            break
        tie = (v == threshold).flatten().nonzero().flatten()[:left]
        mask[name].view(-1)[tie] = True
        left -= len(tie)
    return mask


class SalUnTrainer:
    """A copy of the teacher fine-tuned where the saliency mask allows. The pool and the mask are made at the first
    step (or restored with the checkpoint)."""

    method = "salun"

    def __init__(self, teacher, forget: int, safe: int, settings: SalUnSettings, seed: int = 0):
        self.s = settings
        self.teacher = teacher.eval().requires_grad_(False)
        self.student = copy.deepcopy(teacher).train().requires_grad_(True)
        self.forget, self.safe, self.seed = forget, safe, seed
        self.opt = torch.optim.Adam(self.student.parameters(), lr=settings.lr, betas=(0.9, 0.999))
        self.abar = alphas_cumprod()
        self.gen = torch.Generator().manual_seed(seed)
        self.step_count = 0
        self.pool: torch.Tensor | None = None
        self.pool_labels: torch.Tensor | None = None
        self.mask: dict[str, torch.Tensor] | None = None

    def prepare(self) -> None:
        """Draw the teacher's pool and compute the saliency mask on its forget-class samples."""
        per_class = self.s.pool_per_class or 2 * self.s.batch
        self.pool, self.pool_labels = teacher_pool(self.teacher, per_class, self.s.pool_steps, self.seed + 1)
        self.mask = saliency_mask(copy.deepcopy(self.teacher).requires_grad_(True), self.pool[self.pool_labels == self.forget],
                                  self.forget, self.s.mask_fraction, self.s.batch, self.gen, self.abar)

    def mask_share(self) -> float:
        """The share of weights the mask lets move."""
        return sum(int(m.sum()) for m in self.mask.values()) / sum(m.numel() for m in self.mask.values())

    def _batch(self, keep: torch.Tensor, n: int) -> torch.Tensor:
        idx = keep.nonzero().flatten()
        return idx[torch.randint(len(idx), (n,), generator=self.gen)]

    def step(self) -> dict[str, float]:
        if self.mask is None:
            self.prepare()
        s, n = self.s, self.s.batch
        self.student.train()
        self.opt.zero_grad(set_to_none=True)
        i = self._batch(self.pool_labels != self.forget, n)  # retain: the other classes, label dropout as trained
        y = self.pool_labels[i].clone()
        y[torch.rand(n, generator=self.gen) < s.label_dropout] = self.student.null_label
        retain = denoising_loss(self.student, self.pool[i], antithetic_t(n, self.gen), y,
                                torch.randn((n, 3, 32, 32), generator=self.gen), self.abar)
        j = self._batch(self.pool_labels == self.forget, n)  # forget: c_f relabelled as c_s
        forget = salun_forget_loss(self.student, self.pool[j], antithetic_t(n, self.gen),
                                   torch.full((n,), self.forget, dtype=torch.long),
                                   torch.full((n,), self.safe, dtype=torch.long),
                                   torch.randn((n, 3, 32, 32), generator=self.gen), self.abar)
        (forget + s.retain_coef * retain).backward()
        torch.nn.utils.clip_grad_norm_(self.student.parameters(), s.grad_clip)
        for name, p in self.student.named_parameters():
            if p.grad is not None:
                p.grad.mul_(self.mask[name])
        self.opt.step()
        self.student.eval()
        self.step_count += 1
        return {"salun_forget": forget.item(), "salun_retain": retain.item()}

    @property
    def model(self):
        return self.student

    def state_dict(self) -> dict:
        return dict(method=self.method, step=self.step_count, student=self.student.state_dict(), opt=self.opt.state_dict(),
                    gen=self.gen.get_state(), pool=self.pool, pool_labels=self.pool_labels, mask=self.mask)

    def load_state_dict(self, st: dict) -> None:
        self.student.load_state_dict(st["student"])
        self.opt.load_state_dict(st["opt"])
        self.gen.set_state(st["gen"])
        self.pool, self.pool_labels, self.mask = st["pool"], st["pool_labels"], st["mask"]
        self.step_count = st["step"]
