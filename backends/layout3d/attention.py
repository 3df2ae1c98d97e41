"""Dynamic Self-Attention (DSA) and its relatives as diffusers attention processors.

One processor class is installed on every attention module of a UNet (``install``); a shared
``AttentionController`` tells it, per denoising step, what to do:

* ``plain``    — ordinary attention (optionally *recording* the self-attention keys/values of
  every step from the DSA start on, so that a later stage can attend to this one without
  recomputing it, and recording cross-attention maps for segmentation);
* ``dsa``      — Build-A-Scene: the target's queries attend to the source's keys/values
  concatenated with the target's own keys/values *inside the new box only*:
  ``softmax(q_t [K_src ; K_t·m]ᵀ·scale) [V_src ; V_t·m]``. The published code masks
  multiplicatively (a masked key gives logit 0 and still takes softmax mass); ``masking="neg_inf"``
  is the documented ablation that removes them instead;
* ``mutual``   — MasaCtrl's mutual self-attention, the baseline: the target attends to the
  source's keys/values only.

The source's keys/values come either from the same batch (``[src, tgt]`` halves, the reference's
layout, used when the source is recomputed) or from a cache recorded when the source stage was
generated (no second UNet pass; see ``AttentionController.source_kv``). The same code runs on the
embedded model and on SD 1.5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

MODES = ("plain", "dsa", "mutual")


@dataclass
class DSAConfig:
    """Published defaults of ``abdo-eldesokey/build-a-scene`` (``src/attention/dynamic_sattn.py``)."""

    start_fraction: float = 0.5  # STEP=10 of 20 DDIM steps
    mask_keys: bool = True  # mask_dsa_k
    mask_values: bool = True  # mask_dsa_v (the evaluation setting)
    masking: str = "multiply"  # the reference; "neg_inf" is the ablation
    blend_sattn: bool = False  # blend low-resolution self-attention outputs outside the box
    blend_below: float = 0.5  # ... in layers whose side is < this fraction of the latent side (SD: 16², 8²)

    def __post_init__(self):
        if self.masking not in ("multiply", "neg_inf"):
            raise ValueError(f"masking must be 'multiply' or 'neg_inf', got {self.masking!r}")
        if not 0.0 <= self.start_fraction <= 1.0:
            raise ValueError("DSA start fraction must be in [0, 1]")


@dataclass
class AttentionController:
    """Per-call state shared by all processors of one UNet."""

    mode: str = "plain"
    config: DSAConfig = field(default_factory=DSAConfig)
    step: int = 0
    num_steps: int = 1
    mask: torch.Tensor | None = None  # 1×1×H×W box mask (any resolution) for DSA
    latent_hw: tuple[int, int] = (1, 1)
    source_kv: dict | None = None  # {(layer, step): (k, v)} of the source; None = source is in the batch
    record_kv: dict | None = None  # filled in plain mode from the DSA start on
    record_maps: dict | None = None  # {layer: summed cross-attention probs of the last batch row}
    map_tokens: int = 256  # record cross-attention only in layers of this many tokens (16×16, as the reference)

    def reset(self, **values) -> None:
        """Back to plain attention with nothing recorded (then apply ``values``)."""
        fresh = AttentionController(**values)
        self.__dict__.update(fresh.__dict__)

    @property
    def active(self) -> bool:
        return self.mode != "plain" and self.step >= self.start_step

    @property
    def start_step(self) -> int:
        return int(self.config.start_fraction * self.num_steps)

    def layer_mask(self, n_tokens: int, mode: str = "nearest") -> torch.Tensor:
        """The box mask resized to a layer's token grid, flattened to (tokens, 1)."""
        h, w = self.layer_hw(n_tokens)
        m = F.interpolate(self.mask.float(), size=(h, w), mode=mode, **({} if mode == "nearest" else {"align_corners": False}))
        return m.reshape(h * w, 1)

    def layer_hw(self, n_tokens: int) -> tuple[int, int]:
        H, W = self.latent_hw
        f = math.sqrt(H * W / n_tokens)
        return round(H / f), round(W / f)


class StageAttnProcessor:
    """Attention with Build-A-Scene's stage logic; identical to plain attention in ``plain`` mode."""

    def __init__(self, controller: AttentionController, name: str, is_self: bool):
        self.controller = controller
        self.name = name
        self.is_self = is_self

    def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None, temb=None, **kwargs):
        c = self.controller
        input_ndim = hidden_states.ndim
        if input_ndim == 4:
            b, ch, hh, ww = hidden_states.shape
            hidden_states = hidden_states.view(b, ch, hh * ww).transpose(1, 2)
        residual = hidden_states
        if attn.group_norm is not None:
            hidden_states = attn.group_norm(hidden_states.transpose(1, 2)).transpose(1, 2)
        context = hidden_states if encoder_hidden_states is None else encoder_hidden_states
        if encoder_hidden_states is not None and attn.norm_cross:
            context = attn.norm_encoder_hidden_states(context)
        q, k, v = attn.to_q(hidden_states), attn.to_k(context), attn.to_v(context)

        if self.is_self and c.record_kv is not None and c.step >= c.start_step:
            rows = slice(1, None, 2) if (c.active and c.source_kv is None) else slice(None)
            c.record_kv[(self.name, c.step)] = (k[rows].detach().clone(), v[rows].detach().clone())

        if not self.is_self:
            out = self._cross(attn, q, k, v)
        elif c.active:
            out = self._stage_self(attn, q, k, v)
        else:
            out = _attend(attn, q, k, v)

        out = attn.to_out[1](attn.to_out[0](out))
        if self.is_self and c.active and c.config.blend_sattn:
            out = self._blend_low_res(out)
        if input_ndim == 4:
            out = out.transpose(-1, -2).reshape(b, ch, hh, ww)
        if attn.residual_connection:
            out = out + (residual if input_ndim == 3 else residual.transpose(-1, -2).reshape(b, ch, hh, ww))
        return out / attn.rescale_output_factor

    # --- self-attention of the stages -------------------------------------------------------
    def _source_kv(self, k, v):
        """(K_src, V_src, K_tgt, V_tgt, tgt_rows): from the cache, or the even/odd halves of the batch."""
        c = self.controller
        if c.source_kv is not None:
            ks, vs = c.source_kv[(self.name, c.step)]
            return ks.to(k.dtype), vs.to(v.dtype), k, v, slice(None)
        b = k.shape[0]
        src = torch.arange(0, b, 2, device=k.device)
        tgt = src + 1
        return k[src], v[src], k[tgt], v[tgt], tgt

    def _stage_self(self, attn, q, k, v):
        c = self.controller
        ks, vs, kt, vt, tgt_rows = self._source_kv(k, v)
        qt = q if c.source_kv is not None else q[tgt_rows]
        if c.mode == "mutual":
            out_t = _attend(attn, qt, ks, vs)
        else:
            m = c.layer_mask(q.shape[1]).to(q.dtype)
            bias = None
            if c.config.masking == "multiply":
                kt = kt * m if c.config.mask_keys else kt
                vt = vt * m if c.config.mask_values else vt
            else:
                allowed = torch.cat([torch.ones(ks.shape[1], device=q.device), m[:, 0]]) > 0.5
                bias = torch.zeros(allowed.shape, dtype=q.dtype, device=q.device).masked_fill(~allowed, float("-inf")).view(1, 1, 1, -1)
            out_t = _attend(attn, qt, torch.cat([ks, kt], 1), torch.cat([vs, vt], 1), bias)
        if c.source_kv is not None:
            return out_t
        out = _attend(attn, q, k, v)  # the source rows: normal self-attention
        out[tgt_rows] = out_t
        return out

    def _blend_low_res(self, out):
        """``h_t = (1−m)·h_src + m·h_t`` in the low-resolution layers (needs the source in the batch)."""
        c = self.controller
        h, w = c.layer_hw(out.shape[1])
        if c.source_kv is not None or h >= c.latent_hw[0] * c.config.blend_below:
            return out
        m = c.layer_mask(out.shape[1], mode="bilinear").to(out.dtype)
        out = out.clone()
        out[1::2] = (1 - m) * out[0::2] + m * out[1::2]
        return out

    # --- cross-attention ------------------------------------------------------------------
    def _cross(self, attn, q, k, v):
        c = self.controller
        if c.record_maps is None or q.shape[1] != c.map_tokens or c.step < c.start_step:
            return _attend(attn, q, k, v)
        heads = attn.heads
        qh, kh, vh = (_heads(t, heads) for t in (q, k, v))
        probs = torch.softmax(qh @ kh.transpose(-1, -2) * attn.scale, -1)
        maps = probs[-1].mean(0).detach()  # last row = the conditional target; tokens×words
        prev = c.record_maps.get(self.name)
        c.record_maps[self.name] = maps if prev is None else prev + maps
        return _merge((probs @ vh), heads)


def _heads(t, heads):
    b, n, d = t.shape
    return t.view(b, n, heads, d // heads).transpose(1, 2)


def _merge(t, heads):
    b, h, n, d = t.shape
    return t.transpose(1, 2).reshape(b, n, h * d)


def _attend(attn, q, k, v, bias=None):
    qh, kh, vh = (_heads(t, attn.heads) for t in (q, k, v))
    out = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=bias, scale=attn.scale)
    return _merge(out, attn.heads).to(q.dtype)


def install(unet, controller: AttentionController) -> dict[str, StageAttnProcessor]:
    """Put a ``StageAttnProcessor`` on every attention module of ``unet`` (attn1 = self, attn2 = cross)."""
    procs = {name: StageAttnProcessor(controller, name, name.endswith("attn1.processor"))
             for name in unet.attn_processors}
    unet.set_attn_processor(procs)
    return procs


def cross_attention_map(maps: dict, token_index: int, size: tuple[int, int]) -> torch.Tensor:
    """Average the recorded cross-attention of one token over layers, resized to ``size``, min-max normalised."""
    grids = []
    for probs in maps.values():
        n = probs.shape[0]
        side = int(round(math.sqrt(n)))
        if side * side != n:
            continue
        g = probs[:, token_index].reshape(1, 1, side, side).float()
        grids.append(F.interpolate(g, size=size, mode="bilinear", align_corners=False))
    if not grids:
        raise ValueError("no square cross-attention maps were recorded")
    m = torch.cat(grids).mean(0)[0]
    return (m - m.min()) / (m.max() - m.min() + 1e-8)
