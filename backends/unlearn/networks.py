"""The label-conditional teacher's network: a small ε-prediction UNet at 32×32 (one label per shape plus a
null label for classifier-free and negative guidance).

Why our own few-layer UNet and not diffusers' ``UNet2DModel``: on the suite's two shared CPU cores the
teacher, the fake score and the one-step generator (three copies of this network) must train in minutes;
this one works on 2×2 pixel patches (16×16×12) and does a batch of 64 several times faster.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

DEFAULT_CONFIG = dict(num_classes=5, channels=(32, 64, 96), image_size=32)


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=1)


class ResBlock(nn.Module):
    def __init__(self, cin: int, cout: int, emb: int):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(8, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.e = nn.Linear(emb, 2 * cout)
        self.n2, self.c2 = nn.GroupNorm(8, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, emb):
        h = self.c1(F.silu(self.n1(x)))
        scale, shift = self.e(emb)[:, :, None, None].chunk(2, dim=1)
        h = self.n2(h) * (1 + scale) + shift
        return self.skip(x) + self.c2(F.silu(h))


class LabelUNet(nn.Module):
    """ε_θ(x_t, t, y): y in [0, num_classes) names a shape, y = num_classes is the null (unconditional) label."""

    def __init__(self, num_classes: int = 5, channels: tuple[int, ...] = (32, 64, 96), image_size: int = 32):
        super().__init__()
        self.config = dict(num_classes=num_classes, channels=list(channels), image_size=image_size)
        c0 = channels[0]
        emb = 4 * c0
        self.num_classes = num_classes
        self.t_mlp = nn.Sequential(nn.Linear(c0, emb), nn.SiLU(), nn.Linear(emb, emb))
        self.label = nn.Embedding(num_classes + 1, emb)
        # pixel-unshuffle: the net works at 16×16 on 2×2 patches (12 channels), four times cheaper than at 32×32
        self.inp = nn.Sequential(nn.PixelUnshuffle(2), nn.Conv2d(12, c0, 3, padding=1))
        self.down, self.pool = nn.ModuleList(), nn.ModuleList()
        prev = c0
        for i, c in enumerate(channels):
            self.down.append(ResBlock(prev, c, emb))
            self.pool.append(nn.Conv2d(c, c, 3, stride=2, padding=1) if i < len(channels) - 1 else nn.Identity())
            prev = c
        self.mid = ResBlock(prev, prev, emb)
        self.up = nn.ModuleList()
        for c in reversed(channels):
            self.up.append(ResBlock(prev + c, c, emb))
            prev = c
        self.out = nn.Sequential(nn.GroupNorm(8, prev), nn.SiLU(), nn.Conv2d(prev, 12, 3, padding=1), nn.PixelShuffle(2))
        nn.init.zeros_(self.out[2].weight)
        nn.init.zeros_(self.out[2].bias)

    @property
    def null_label(self) -> int:
        return self.num_classes

    def forward(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        emb = self.t_mlp(timestep_embedding(t, self.config["channels"][0])) + self.label(y)
        h = self.inp(x)
        skips = []
        for block, pool in zip(self.down, self.pool, strict=True):
            h = block(h, emb)
            skips.append(h)
            h = pool(h)
        h = self.mid(h, emb)
        for block in self.up:
            s = skips.pop()
            if h.shape[-1] != s.shape[-1]:
                h = F.interpolate(h, size=s.shape[-2:], mode="nearest")
            h = block(torch.cat([h, s], dim=1), emb)
        return self.out(h)

    def save(self, folder: str | Path, extra: dict | None = None) -> None:
        """``model.safetensors`` + ``config.json`` (``extra`` keys are added to the config, e.g. the teacher id)."""
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        save_file({k: v.detach().contiguous() for k, v in self.state_dict().items()}, folder / "model.safetensors")
        (folder / "config.json").write_text(json.dumps({**self.config, **(extra or {})}, indent=2))

    @classmethod
    def load(cls, folder: str | Path) -> tuple[LabelUNet, dict]:
        """The network and its whole config (with any extra keys)."""
        from safetensors.torch import load_file

        folder = Path(folder)
        cfg = json.loads((folder / "config.json").read_text())
        model = cls(**{k: cfg[k] for k in ("num_classes", "channels", "image_size")})
        model.load_state_dict(load_file(folder / "model.safetensors"))
        return model.eval(), cfg
