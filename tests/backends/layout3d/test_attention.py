"""The stage attention processors against plain attention and against their formulas."""

import pytest
import torch
from diffusers.models.attention_processor import Attention, AttnProcessor2_0

from backends.layout3d.attention import AttentionController, DSAConfig, StageAttnProcessor


def _attn(dim=16, heads=2):
    torch.manual_seed(0)
    return Attention(dim, heads=heads, dim_head=dim // heads)


def _run(attn, proc, x):
    attn.set_processor(proc)
    return attn(x)


def test_plain_mode_equals_diffusers_processor():
    attn, x = _attn(), torch.randn(2, 16, 16)
    ref = _run(attn, AttnProcessor2_0(), x)
    out = _run(attn, StageAttnProcessor(AttentionController(), "a.attn1.processor", True), x)
    assert torch.allclose(out, ref, atol=1e-6)


def _controller(mode, mask_value, masking="multiply"):
    c = AttentionController(mode=mode, config=DSAConfig(start_fraction=0.0, masking=masking), num_steps=1,
                            latent_hw=(4, 4), mask=torch.full((1, 1, 4, 4), float(mask_value)))
    return c


def test_dsa_equals_plain_attention_when_the_source_is_the_target_and_the_box_admits_everything():
    """Keys [K; K] with values [V; V]: softmax over duplicates gives plain attention exactly."""
    attn = _attn()
    t = torch.randn(1, 16, 16)
    batch = torch.cat([t, t])  # [source, target]
    ref = _run(attn, AttnProcessor2_0(), t)
    for masking in ("multiply", "neg_inf"):
        out = _run(attn, StageAttnProcessor(_controller("dsa", 1.0, masking), "x.attn1.processor", True), batch)
        assert torch.allclose(out[1:], ref, atol=1e-5), masking
        assert torch.allclose(out[:1], ref, atol=1e-5)  # the source branch is plain attention


def test_dsa_with_an_empty_box_and_neg_inf_masking_is_mutual_self_attention():
    attn = _attn()
    batch = torch.randn(2, 16, 16)
    mutual = _run(attn, StageAttnProcessor(_controller("mutual", 0.0), "x.attn1.processor", True), batch)
    dsa = _run(attn, StageAttnProcessor(_controller("dsa", 0.0, "neg_inf"), "x.attn1.processor", True), batch)
    assert torch.allclose(mutual, dsa, atol=1e-5)


def test_multiplicative_masking_keeps_softmax_mass_on_masked_keys():
    """The published masking: a masked key has logit 0 and value 0 — not the same as removing it."""
    attn = _attn()
    batch = torch.randn(2, 16, 16)
    mult = _run(attn, StageAttnProcessor(_controller("dsa", 0.0, "multiply"), "x.attn1.processor", True), batch)
    mutual = _run(attn, StageAttnProcessor(_controller("mutual", 0.0), "x.attn1.processor", True), batch)
    assert not torch.allclose(mult[1], mutual[1], atol=1e-4)
    # explicit formula: softmax(q [K_s; 0]ᵀ·scale) [V_s; 0]
    q, k, v = attn.to_q(batch), attn.to_k(batch), attn.to_v(batch)
    h = attn.heads
    qh = q[1].view(16, h, -1).transpose(0, 1)
    kk = torch.cat([k[0], torch.zeros_like(k[1])]).view(32, h, -1).transpose(0, 1)
    vv = torch.cat([v[0], torch.zeros_like(v[1])]).view(32, h, -1).transpose(0, 1)
    o = torch.softmax(qh @ kk.transpose(-1, -2) * attn.scale, -1) @ vv
    expect = attn.to_out[0](o.transpose(0, 1).reshape(16, -1))
    assert torch.allclose(mult[1], expect, atol=1e-5)


def test_cached_source_equals_source_in_batch():
    attn = _attn()
    batch = torch.randn(2, 16, 16)
    c = _controller("dsa", 0.5)
    c.mask = torch.zeros(1, 1, 4, 4)
    c.mask[..., :2, :] = 1
    in_batch = _run(attn, StageAttnProcessor(c, "x.attn1.processor", True), batch)
    cache = {("x.attn1.processor", 0): (attn.to_k(batch[:1]), attn.to_v(batch[:1]))}
    c.source_kv = cache
    cached = _run(attn, StageAttnProcessor(c, "x.attn1.processor", True), batch[1:])
    assert torch.allclose(in_batch[1:], cached, atol=1e-5)


def test_inactive_before_the_start_step():
    attn, batch = _attn(), torch.randn(2, 16, 16)
    c = _controller("mutual", 0.0)
    c.config = DSAConfig(start_fraction=0.5)
    c.num_steps, c.step = 10, 4
    plain = _run(attn, AttnProcessor2_0(), batch)
    assert torch.allclose(_run(attn, StageAttnProcessor(c, "x.attn1.processor", True), batch), plain, atol=1e-6)


def test_bad_config():
    with pytest.raises(ValueError):
        DSAConfig(masking="zero")
