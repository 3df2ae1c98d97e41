"""Temporal attention with rotary position encoding over the TRUE frame indices (Depth Any Video).

SVD's temporal transformer adds a sinusoidal embedding of 0…F-1 to its input, so a clip of key
frames spread over a long video would look like consecutive frames. Depth Any Video drops that
embedding and rotates queries and keys by their frame index instead: attention then depends only on
index differences, so the same network serves single images, dense clips, any frame rate and sparse
key frames. Module names follow diffusers' ``TransformerSpatioTemporalModel`` minus ``time_pos_embed``,
which is also the published checkpoint's layout.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from diffusers.models.attention import TemporalBasicTransformerBlock
from diffusers.models.attention_processor import Attention
from diffusers.models.transformers.transformer_temporal import TransformerSpatioTemporalModel

ROPE_THETA = 10_000.0


def rope_angles(positions: torch.Tensor, dim: int, theta: float = ROPE_THETA) -> torch.Tensor:
    """B×F frame positions → B×F×(dim/2) rotation angles (float64 so large indices stay exact)."""
    if dim % 2:
        raise ValueError(f"RoPE needs an even head dimension, got {dim}")
    freqs = theta ** -(torch.arange(0, dim, 2, dtype=torch.float64, device=positions.device) / dim)
    return positions.to(torch.float64)[..., None] * freqs


def apply_rope(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate consecutive channel pairs of ``x`` (N×heads×F×d) by ``angles`` (N×F×d/2)."""
    cos, sin = angles.cos()[:, None].to(torch.float32), angles.sin()[:, None].to(torch.float32)
    pairs = x.float().unflatten(-1, (-1, 2))
    a, b = pairs[..., 0], pairs[..., 1]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2).to(x.dtype)


class RopeAttnProcessor:
    """Scaled dot-product attention whose queries (and, in self-attention, keys) are rotated by frame position.

    As in the authors' ``AttnRopeProcessor2_0``: cross-attention rotates its queries too but not its keys
    (the context has no frame index). With the one-token context the published pipeline passes, that
    rotation cannot change the output (softmax over one key); with a longer context it does.
    """

    def __call__(self, attn: Attention, hidden_states: torch.Tensor, encoder_hidden_states: torch.Tensor | None = None,
                 attention_mask: torch.Tensor | None = None, frame_angles: torch.Tensor | None = None,
                 **_) -> torch.Tensor:
        context = hidden_states if encoder_hidden_states is None else encoder_hidden_states
        n = hidden_states.shape[0]
        q, k, v = attn.to_q(hidden_states), attn.to_k(context), attn.to_v(context)
        q, k, v = (t.view(n, -1, attn.heads, t.shape[-1] // attn.heads).transpose(1, 2) for t in (q, k, v))
        if frame_angles is not None:
            q = apply_rope(q, frame_angles)
            if encoder_hidden_states is None:
                k = apply_rope(k, frame_angles)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask)
        out = out.transpose(1, 2).reshape(n, -1, attn.heads * out.shape[-1]).to(q.dtype)
        out = attn.to_out[1](attn.to_out[0](out))
        return out


class TemporalRopeTransformerBlock(TemporalBasicTransformerBlock):
    """diffusers' temporal block (same weights) with RoPE in its temporal self-attention."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.attn1.set_processor(RopeAttnProcessor())
        if self.attn2 is not None:
            self.attn2.set_processor(RopeAttnProcessor())

    def forward(self, hidden_states: torch.Tensor, num_frames: int, encoder_hidden_states: torch.Tensor | None = None,
                frame_angles: torch.Tensor | None = None) -> torch.Tensor:
        batch_frames, seq, channels = hidden_states.shape
        batch = batch_frames // num_frames
        h = hidden_states.reshape(batch, num_frames, seq, channels).permute(0, 2, 1, 3).reshape(batch * seq, num_frames, channels)
        residual = h
        h = self.ff_in(self.norm_in(h))
        if self.is_res:
            h = h + residual
        h = self.attn1(self.norm1(h), frame_angles=frame_angles) + h
        if self.attn2 is not None:
            h = self.attn2(self.norm2(h), encoder_hidden_states=encoder_hidden_states, frame_angles=frame_angles) + h
        out = self.ff(self.norm3(h))
        h = out + h if self.is_res else out
        return h.reshape(batch, seq, num_frames, channels).permute(0, 2, 1, 3).reshape(batch_frames, seq, channels)


class TransformerSpatioTemporalRopeModel(TransformerSpatioTemporalModel):
    """Spatial transformer + RoPE temporal transformer, mixed by SVD's learned ``AlphaBlender``."""

    def __init__(self, num_attention_heads: int = 16, attention_head_dim: int = 88, in_channels: int = 320,
                 out_channels: int | None = None, num_layers: int = 1, cross_attention_dim: int | None = None):
        super().__init__(num_attention_heads, attention_head_dim, in_channels, out_channels, num_layers,
                         cross_attention_dim)
        del self.time_pos_embed, self.time_proj  # replaced by RoPE over frame indices
        self.temporal_transformer_blocks = torch.nn.ModuleList([
            TemporalRopeTransformerBlock(self.inner_dim, self.inner_dim, num_attention_heads, attention_head_dim,
                                         cross_attention_dim=cross_attention_dim)
            for _ in range(num_layers)
        ])

    def forward(self, hidden_states: torch.Tensor, encoder_hidden_states: torch.Tensor,
                image_only_indicator: torch.Tensor, position_ids: torch.Tensor | None = None,
                return_dict: bool = False):
        batch_frames, _, height, width = hidden_states.shape
        num_frames = image_only_indicator.shape[-1]
        batch = batch_frames // num_frames
        context = encoder_hidden_states.reshape(batch, num_frames, -1, encoder_hidden_states.shape[-1])[:, 0]
        time_context = context.repeat_interleave(height * width, dim=0)
        if position_ids is None:
            position_ids = torch.arange(num_frames, device=hidden_states.device).expand(batch, num_frames)
        angles = rope_angles(position_ids, self.attention_head_dim).repeat_interleave(height * width, dim=0)

        residual = hidden_states
        h = self.norm(hidden_states)
        inner = h.shape[1]
        h = self.proj_in(h.permute(0, 2, 3, 1).reshape(batch_frames, height * width, inner))
        for block, temporal in zip(self.transformer_blocks, self.temporal_transformer_blocks, strict=True):
            h = block(h, encoder_hidden_states=encoder_hidden_states)
            mixed = temporal(h, num_frames=num_frames, encoder_hidden_states=time_context, frame_angles=angles)
            h = self.time_mixer(x_spatial=h, x_temporal=mixed, image_only_indicator=image_only_indicator)
        h = self.proj_out(h).reshape(batch_frames, height, width, -1).permute(0, 3, 1, 2)
        out = h + residual
        return (out,) if not return_dict else out
