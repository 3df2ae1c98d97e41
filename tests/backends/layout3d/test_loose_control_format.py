"""LooseControl's published LoRA against the authors' code (fixtures from
training/published_formats/loose_control.py: their load_attn_procs format and diffusers' LoRAAttnProcessor)."""

from __future__ import annotations

import pytest
import torch
from diffusers.models.attention_processor import Attention
from safetensors import safe_open

from backends.common.published_formats import ASSETS, compare_format, read_fixture
from backends.layout3d.loading import lora_compatible_keys, merge_attn_procs_lora
from backends.layout3d.published import PUBLISHED_MODELS, expected_format


def test_loader_takes_every_key_of_the_published_lora():
    published = read_fixture("loose-control-3dbox")
    assert "shariqfarooq123/LooseControl@" in published.source
    assert "loose-control-3dbox" in PUBLISHED_MODELS
    mismatches = compare_format(published, expected_format("loose-control-3dbox"))
    assert not any(mismatches.values()), {c: m.summary() for c, m in mismatches.items() if m}
    lora = published.components["lora"]
    # every attention layer of the SD 1.5 ControlNet: 3 down levels x 2 transformers + mid, attn1 and attn2
    layers = {k.split(".processor.")[0] for k in lora}
    assert len(layers) == 14 and len(lora) == 14 * 8
    # cross-attention keys/values read CLIP's 768-wide text states
    assert lora["down_blocks.0.attentions.0.transformer_blocks.0.attn2.processor.to_k_lora.down.weight"][1] == 768


def _forward_fixture():
    with safe_open(str(ASSETS / "loose-control-3dbox.forward.safetensors"), "pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, f.metadata()["source"]


def _small_attention(tensors):
    model = torch.nn.ModuleDict({"attn1": Attention(64, heads=2, dim_head=32),
                                 "attn2": Attention(64, cross_attention_dim=32, heads=2, dim_head=32)})
    model.load_state_dict({k.removeprefix("model."): v for k, v in tensors.items() if k.startswith("model.")})
    return model.eval()


def _run(model, tensors):
    x, ctx = tensors["input.hidden"], tensors["input.context"]
    return model["attn1"](x), model["attn2"](x, encoder_hidden_states=ctx)


@torch.no_grad()
def test_merged_lora_gives_the_attention_output_of_their_lora_processor():
    tensors, source = _forward_fixture()
    assert "LoRAAttnProcessor" in source
    lora = {k.removeprefix("lora."): v for k, v in tensors.items() if k.startswith("lora.")}
    model = _small_attention(tensors)
    plain = _run(model, tensors)
    assert merge_attn_procs_lora(model, lora) == 8
    merged = _run(model, tensors)
    for name, got, before in zip(("attn1", "attn2"), merged, plain, strict=True):
        want = tensors[f"output.{name}"]
        assert (want - before).abs().max() > 0.05  # the LoRA changes the output, so matching it is a check
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_other_load_attn_procs_key_forms_merge_the_same():
    """``unet.``-prefixed and ``…to_q.lora.down.weight`` keys (also read by load_attn_procs) give the same model."""
    tensors, _ = _forward_fixture()
    lora = {k.removeprefix("lora."): v for k, v in tensors.items() if k.startswith("lora.")}
    compatible = lora_compatible_keys(lora)
    assert "attn1.to_out.0.lora.up.weight" in compatible
    reference = _small_attention(tensors)
    merge_attn_procs_lora(reference, lora)
    for form in (compatible, {f"unet.{k}": v for k, v in lora.items()}):
        model = _small_attention(tensors)
        merge_attn_procs_lora(model, form)
        for (name, a), b in zip(model.state_dict().items(), reference.state_dict().values(), strict=True):
            assert torch.equal(a, b), name


def test_bad_lora_is_refused():
    tensors, _ = _forward_fixture()
    lora = {k.removeprefix("lora."): v for k, v in tensors.items() if k.startswith("lora.")}
    half = {k: v for k, v in lora.items() if ".up." not in k}
    with pytest.raises(ValueError, match="has only"):
        merge_attn_procs_lora(_small_attention(tensors), half)
    wrong = {k: (v[:, :-1] if k.endswith("down.weight") else v) for k, v in lora.items()}
    with pytest.raises(ValueError, match="does not fit"):
        merge_attn_procs_lora(_small_attention(tensors), wrong)
