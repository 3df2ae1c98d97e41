"""The ADM U-Net ("guided diffusion") that I2SB/RCSB's ImageNet bridge is built on, with the same
module names, so the published ``latest.pt`` loads into it unchanged.

Written from the architecture description (Dhariwal & Nichol 2021; I2SB's ``Image256Net``): residual
blocks with scale-shift norm and up/down sampling inside, legacy QKV attention at the listed
resolutions, skip connections between input and output blocks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn


class GroupNorm32(nn.GroupNorm):
    def forward(self, x):
        return super().forward(x.float()).type(x.dtype)


def norm(channels: int) -> GroupNorm32:
    return GroupNorm32(32, channels)


def timestep_embedding(t: torch.Tensor, dim: int, max_period: int = 10000) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], -1)
    return F.pad(emb, (0, 1)) if dim % 2 else emb


class Upsample(nn.Module):
    def __init__(self, channels: int, use_conv: bool):
        super().__init__()
        if use_conv:
            self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.use_conv = use_conv

    def forward(self, x):
        x = F.interpolate(x, scale_factor=2, mode="nearest")
        return self.conv(x) if self.use_conv else x


class Downsample(nn.Module):
    def __init__(self, channels: int, use_conv: bool):
        super().__init__()
        self.op = nn.Conv2d(channels, channels, 3, stride=2, padding=1) if use_conv else nn.AvgPool2d(2, 2)

    def forward(self, x):
        return self.op(x)


class ResBlock(nn.Module):
    def __init__(self, channels: int, emb_channels: int, out_channels: int, dropout: float = 0.0,
                 scale_shift: bool = True, up: bool = False, down: bool = False):
        super().__init__()
        self.in_layers = nn.Sequential(norm(channels), nn.SiLU(), nn.Conv2d(channels, out_channels, 3, padding=1))
        self.updown = up or down
        if up:
            self.h_upd, self.x_upd = Upsample(channels, False), Upsample(channels, False)
        elif down:
            self.h_upd, self.x_upd = Downsample(channels, False), Downsample(channels, False)
        self.scale_shift = scale_shift
        self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(emb_channels, 2 * out_channels if scale_shift else out_channels))
        self.out_layers = nn.Sequential(norm(out_channels), nn.SiLU(), nn.Dropout(dropout),
                                        nn.Conv2d(out_channels, out_channels, 3, padding=1))
        self.skip_connection = nn.Identity() if out_channels == channels else nn.Conv2d(channels, out_channels, 1)

    def forward(self, x, emb):
        if self.updown:
            h = self.in_layers[:-1](x)
            h = self.in_layers[-1](self.h_upd(h))
            x = self.x_upd(x)
        else:
            h = self.in_layers(x)
        e = self.emb_layers(emb).type(h.dtype)[..., None, None]
        if self.scale_shift:
            scale, shift = e.chunk(2, 1)
            h = self.out_layers[1:](self.out_layers[0](h) * (1 + scale) + shift)
        else:
            h = self.out_layers(h + e)
        return self.skip_connection(x) + h


class AttentionBlock(nn.Module):
    """Self-attention over all positions, ADM's legacy QKV layout (heads split after the qkv conv)."""

    def __init__(self, channels: int, num_heads: int = 1, num_head_channels: int = -1):
        super().__init__()
        self.num_heads = num_heads if num_head_channels == -1 else channels // num_head_channels
        self.norm = norm(channels)
        self.qkv = nn.Conv1d(channels, channels * 3, 1)
        self.proj_out = nn.Conv1d(channels, channels, 1)

    def forward(self, x, emb=None):
        b, c, *spatial = x.shape
        x = x.reshape(b, c, -1)
        qkv = self.qkv(self.norm(x))
        bs, width, length = qkv.shape
        ch = width // (3 * self.num_heads)
        q, k, v = qkv.reshape(bs * self.num_heads, ch * 3, length).split(ch, dim=1)
        scale = 1 / math.sqrt(math.sqrt(ch))
        w = torch.einsum("bct,bcs->bts", q * scale, k * scale).float().softmax(-1).type(q.dtype)
        h = torch.einsum("bts,bcs->bct", w, v).reshape(bs, -1, length)
        return (x + self.proj_out(h)).reshape(b, c, *spatial)


class EmbedSequential(nn.Sequential):
    def forward(self, x, emb):
        for layer in self:
            x = layer(x, emb) if isinstance(layer, ResBlock | AttentionBlock) else layer(x)
        return x


class ADMUNet(nn.Module):
    """ADM's UNetModel (2-D, no class conditioning). Defaults are I2SB's ImageNet 256² network."""

    def __init__(self, image_size: int = 256, in_channels: int = 3, model_channels: int = 256, out_channels: int = 3,
                 num_res_blocks: int = 2, attention_resolutions: Sequence[int] = (32, 16, 8),
                 channel_mult: Sequence[int] | None = None, num_heads: int = 4, num_head_channels: int = 64,
                 dropout: float = 0.0, scale_shift: bool = True, resblock_updown: bool = True):
        super().__init__()
        if channel_mult is None:
            channel_mult = {512: (0.5, 1, 1, 2, 2, 4, 4), 256: (1, 1, 2, 2, 4, 4), 128: (1, 1, 2, 3, 4),
                            64: (1, 2, 3, 4)}.get(image_size, (1, 2, 2, 2))
        self.config = dict(image_size=image_size, in_channels=in_channels, model_channels=model_channels,
                           out_channels=out_channels, num_res_blocks=num_res_blocks,
                           attention_resolutions=tuple(attention_resolutions), channel_mult=tuple(channel_mult),
                           num_heads=num_heads, num_head_channels=num_head_channels)
        attn_ds = {image_size // r for r in attention_resolutions}
        emb_dim = model_channels * 4
        self.model_channels = model_channels
        self.time_embed = nn.Sequential(nn.Linear(model_channels, emb_dim), nn.SiLU(), nn.Linear(emb_dim, emb_dim))

        def res(cin, cout, **kw):
            return ResBlock(cin, emb_dim, cout, dropout, scale_shift, **kw)

        def attn(c):
            return AttentionBlock(c, num_heads, num_head_channels)

        ch = input_ch = int(channel_mult[0] * model_channels)
        self.input_blocks = nn.ModuleList([EmbedSequential(nn.Conv2d(in_channels, ch, 3, padding=1))])
        chans, ds = [ch], 1
        for level, mult in enumerate(channel_mult):
            for _ in range(num_res_blocks):
                layers = [res(ch, int(mult * model_channels))]
                ch = int(mult * model_channels)
                if ds in attn_ds:
                    layers.append(attn(ch))
                self.input_blocks.append(EmbedSequential(*layers))
                chans.append(ch)
            if level != len(channel_mult) - 1:
                self.input_blocks.append(EmbedSequential(res(ch, ch, down=True) if resblock_updown else Downsample(ch, True)))
                chans.append(ch)
                ds *= 2
        self.middle_block = EmbedSequential(res(ch, ch), attn(ch), res(ch, ch))
        self.output_blocks = nn.ModuleList()
        for level, mult in list(enumerate(channel_mult))[::-1]:
            for i in range(num_res_blocks + 1):
                layers = [res(ch + chans.pop(), int(model_channels * mult))]
                ch = int(model_channels * mult)
                if ds in attn_ds:
                    layers.append(attn(ch))
                if level and i == num_res_blocks:
                    layers.append(res(ch, ch, up=True) if resblock_updown else Upsample(ch, True))
                    ds //= 2
                self.output_blocks.append(EmbedSequential(*layers))
        self.out = nn.Sequential(norm(ch), nn.SiLU(), nn.Conv2d(input_ch, out_channels, 3, padding=1))

    def forward(self, x: torch.Tensor, timesteps: torch.Tensor) -> torch.Tensor:
        emb = self.time_embed(timestep_embedding(timesteps, self.model_channels))
        hs, h = [], x
        for block in self.input_blocks:
            h = block(h, emb)
            hs.append(h)
        h = self.middle_block(h, emb)
        for block in self.output_blocks:
            h = block(torch.cat([h, hs.pop()], 1), emb)
        return self.out(h)
