"""Depth Any Video's published checkpoint against the authors' code (fixtures from
training/published_formats/depth_any_video.py, built with Nightmare-n/DepthAnyVideo's own classes)."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open

from backends.common.published_formats import ASSETS, compare_format, read_fixture
from backends.videodepth.networks import UNetSpatioTemporalRopeConditionModel
from backends.videodepth.published import PUBLISHED_MODELS, expected_format


@pytest.mark.parametrize("model_id", PUBLISHED_MODELS)
def test_loader_takes_every_published_key_at_full_size(model_id):
    published = read_fixture(model_id)
    assert "Nightmare-n/DepthAnyVideo@" in published.source
    assert set(published.components) == {"unet", "unet_interp", "vae"}
    expected = expected_format(model_id)
    mismatches = compare_format(published, expected)
    assert not any(mismatches.values()), {c: m.summary() for c, m in mismatches.items() if m}
    # full size, not a small stand-in: SVD's 1.5 G-parameter UNet, 16 input channels for the interpolator
    unet = published.components["unet"]
    assert sum(torch.Size(s).numel() for s in unet.values()) > 1.4e9
    assert unet["conv_in.weight"] == (320, 8, 3, 3)
    assert published.components["unet_interp"]["conv_in.weight"] == (320, 16, 3, 3)
    # no SVD added-time embedding and no sinusoidal frame embedding in the published UNet (RoPE instead)
    assert not any(k.startswith("add_embedding") or "time_pos_embed" in k for k in unet)


def _forward_fixture():
    path = ASSETS / "depth-any-video.forward.safetensors"
    with safe_open(str(path), "pt") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys()}
        meta = f.metadata()
    return tensors, json.loads(meta["config"]), meta["source"]


@torch.no_grad()
def test_project_unet_reproduces_the_authors_forward_pass():
    tensors, config, source = _forward_fixture()
    assert source.startswith("Nightmare-n/DepthAnyVideo@")
    net = UNetSpatioTemporalRopeConditionModel(**config).eval()
    weights = {k.removeprefix("weights."): v.float() for k, v in tensors.items() if k.startswith("weights.")}
    net.load_state_dict(weights, strict=True)  # same names: raises on any missing or left-over key
    x, ctx, t = tensors["input.sample"], tensors["input.context"], tensors["input.timestep"]
    pos = tensors["input.position_ids"]
    sparse = net(x, t, encoder_hidden_states=ctx, position_ids=pos).sample
    default = net(x, t, encoder_hidden_states=ctx).sample
    assert tensors["output.sparse"].abs().mean() > 0.1  # a non-trivial output to match
    torch.testing.assert_close(sparse, tensors["output.sparse"], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(default, tensors["output.default"], atol=1e-4, rtol=1e-4)
    # the frame indices matter (RoPE over true indices), so matching both is not matching one twice
    assert (tensors["output.sparse"] - tensors["output.default"]).abs().max() > 1e-2
