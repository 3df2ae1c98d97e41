"""The text-conditioned teacher as the Unlearning code calls every network: ε(x_t, t, y).

Here y is a :class:`Cond` — the prompt's embedding from the frozen text encoder and the box depth as the UNet's 16
extra channels (``backends.common.tinysd``) — so the losses written for the label teacher (``losses.py``) run on it
unchanged. :class:`TextEps` wraps a diffusers ``UNet2DConditionModel`` (the teacher's, or a trained copy: SFD's
generator and fake score, ESD's student); :class:`Guided` is the teacher with classifier-free guidance, as the 3D
Layout tab samples it. The VAE and text encoder stay frozen: training works on 4×16×16 latents, only the images
shown or measured are decoded.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from backends.common.tinysd import depth_channels, encode_prompts

UNET_WEIGHTS = "diffusion_pytorch_model.safetensors"


@dataclass
class Cond:
    """A batch of conditions: prompt embeddings (B×L×D) and box-depth channels (B×16×16×16)."""

    emb: torch.Tensor
    depth: torch.Tensor

    def __len__(self) -> int:
        return self.emb.shape[0]

    def __getitem__(self, idx) -> Cond:
        return Cond(self.emb[idx], self.depth[idx])

    def with_emb(self, emb: torch.Tensor) -> Cond:
        """The same box depths under other prompts (e.g. the null prompt, or the prompt with the safe word)."""
        return Cond(emb.expand(len(self), -1, -1) if emb.shape[0] == 1 else emb, self.depth)

    @staticmethod
    def cat(conds: list[Cond]) -> Cond:
        return Cond(torch.cat([c.emb for c in conds]), torch.cat([c.depth for c in conds]))


class TextEps(nn.Module):
    """ε(x_t, t, Cond) of a 3D Layout UNet: the latents with the depth channels concatenated, the prompt by
    cross-attention."""

    def __init__(self, unet):
        super().__init__()
        self.unet = unet

    def forward(self, x: torch.Tensor, t: torch.Tensor, y: Cond) -> torch.Tensor:
        return self.unet(torch.cat([x, y.depth.to(x.dtype)], 1), t, encoder_hidden_states=y.emb).sample

    def save(self, folder: str | Path, extra: dict | None = None) -> None:
        """The UNet as diffusers saves it (config.json + safetensors), ``extra`` keys added to its config.json
        (diffusers ignores them on load)."""
        folder = Path(folder)
        self.unet.save_pretrained(folder, safe_serialization=True)
        cfg = json.loads((folder / "config.json").read_text())
        cfg.pop("_name_or_path", None)  # where the teacher was loaded from: a folder of this machine
        (folder / "config.json").write_text(json.dumps({**cfg, **(extra or {})}, indent=2))

    @classmethod
    def load(cls, folder: str | Path) -> tuple[TextEps, dict]:
        from diffusers import UNet2DConditionModel

        folder = Path(folder)
        unet = UNet2DConditionModel.from_pretrained(folder).float().eval()
        return cls(unet), json.loads((folder / "config.json").read_text())


class Guided(nn.Module):
    """Classifier-free guidance ε(∅) + s·(ε(c) − ε(∅)), or with ``negative`` (an embedding) in place of ∅: the
    sampling-time negative prompt."""

    def __init__(self, net: nn.Module, null: torch.Tensor, scale: float, negative: torch.Tensor | None = None):
        super().__init__()
        self.net, self.null, self.scale, self.negative = net, null, scale, negative

    def forward(self, x: torch.Tensor, t: torch.Tensor, y: Cond) -> torch.Tensor:
        base = y.with_emb(self.negative if self.negative is not None else self.null)
        if self.scale == 1.0 and self.negative is None:
            return self.net(x, t, y)
        e = self.net(torch.cat([x, x]), torch.cat([t, t]), Cond.cat([base, y]))
        u, c = e.chunk(2)
        return u + self.scale * (c - u)


def fingerprint(unet_folder: str | Path) -> str:
    """The first 16 hex digits of the sha256 of a UNet folder's weights (what every trained network records)."""
    return hashlib.sha256((Path(unet_folder) / UNET_WEIGHTS).read_bytes()).hexdigest()[:16]


class TextTeacher:
    """The frozen parts of the 3D Layout model and its noise schedule: ``eps`` (the teacher's ε, unguided),
    ``encode`` (prompts → embeddings), ``decode`` (latents → uint8 images), ``abar`` (the scheduler's ᾱ)."""

    kind = "text"

    def __init__(self, unet, text_encoder, tokenizer, vae, alphas_cumprod: torch.Tensor, fingerprint: str):
        self.eps = TextEps(unet.float().eval()).requires_grad_(False)
        self.text_encoder = text_encoder.float().eval().requires_grad_(False)
        self.tokenizer = tokenizer
        self.vae = vae.float().eval().requires_grad_(False)
        self.abar = alphas_cumprod.float()
        self.fingerprint = fingerprint
        self.latent_shape = (unet.config.out_channels, unet.config.sample_size, unet.config.sample_size)
        extra = unet.config.in_channels - unet.config.out_channels
        self.depth_factor = int(round(extra ** 0.5))
        self._emb: dict[str, torch.Tensor] = {}

    @classmethod
    def load(cls, folder: str | Path) -> TextTeacher:
        from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
        from transformers import CLIPTextModel, PreTrainedTokenizerFast

        folder = Path(folder)
        sched = DDIMScheduler.from_pretrained(folder / "scheduler")
        return cls(UNet2DConditionModel.from_pretrained(folder / "unet"),
                   CLIPTextModel.from_pretrained(folder / "text_encoder", dtype=torch.float32),  # the files are fp16
                   PreTrainedTokenizerFast.from_pretrained(folder / "tokenizer"),
                   AutoencoderKL.from_pretrained(folder / "vae"), sched.alphas_cumprod, fingerprint(folder / "unet"))

    @torch.no_grad()
    def encode(self, prompts: list[str]) -> torch.Tensor:
        """B×L×D embeddings (cached per prompt: the text encoder is frozen)."""
        missing = [p for p in dict.fromkeys(prompts) if p not in self._emb]
        if missing:
            for p, e in zip(missing, encode_prompts(self.tokenizer, self.text_encoder, missing), strict=True):
                self._emb[p] = e
        return torch.stack([self._emb[p] for p in prompts])

    def depth(self, depth: np.ndarray) -> torch.Tensor:
        """B×H×W near-bright box depth in [0, 1] → the UNet's B×f²×h×w extra channels."""
        d = torch.as_tensor(np.asarray(depth, np.float32))[:, None]
        return depth_channels(d, self.depth_factor)

    def cond(self, prompts: list[str], depth: torch.Tensor) -> Cond:
        return Cond(self.encode(prompts), depth)

    @torch.no_grad()
    def decode(self, latents: torch.Tensor, batch: int = 32) -> np.ndarray:
        """N×H×W×3 uint8 images of latents (the VAE's scaling factor undone)."""
        out = []
        for i in range(0, len(latents), batch):
            x = self.vae.decode(latents[i:i + batch] / self.vae.config.scaling_factor).sample
            out.append(((x.clamp(-1, 1) + 1) * 127.5).round().byte().permute(0, 2, 3, 1).numpy())
        return np.concatenate(out) if out else np.zeros((0, 64, 64, 3), np.uint8)

    @torch.no_grad()
    def roundtrip(self, images: np.ndarray, batch: int = 32) -> np.ndarray:
        """Renders as the decoder draws them (encode → decode): the reference the generated images are measured
        against, so the VAE's blur is not counted against a method."""
        out = []
        for i in range(0, len(images), batch):
            x = torch.from_numpy(np.ascontiguousarray(images[i:i + batch])).permute(0, 3, 1, 2).float() / 127.5 - 1
            out.append(self.decode(self.vae.encode(x).latent_dist.mean * self.vae.config.scaling_factor))
        return np.concatenate(out)
