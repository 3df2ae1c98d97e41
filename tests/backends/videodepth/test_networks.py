"""The RoPE temporal attention and the published Depth Any Video UNet class, on tiny random configs."""

import json

import pytest
import torch

from backends.videodepth.attention import apply_rope, rope_angles
from backends.videodepth.networks import SpaceToDepthCodec, UNetSpatioTemporalRopeConditionModel

from .conftest import TINY_UNET, tiny_unet


def test_rope_scores_depend_only_on_index_differences():
    torch.manual_seed(0)
    q, k = torch.randn(1, 1, 4, 8), torch.randn(1, 1, 4, 8)
    pos = torch.tensor([[0, 3, 4, 10]])

    def scores(p):
        a = rope_angles(p, 8)
        return apply_rope(q, a) @ apply_rope(k, a).transpose(-1, -2)

    assert torch.allclose(scores(pos), scores(pos + 1000), atol=1e-4)
    assert not torch.allclose(scores(pos), scores(pos * 2), atol=1e-2)
    # a rotation: norms are kept
    assert torch.allclose(apply_rope(q, rope_angles(pos, 8)).norm(dim=-1), q.norm(dim=-1), atol=1e-5)
    with pytest.raises(ValueError, match="even"):
        rope_angles(pos, 7)


def test_unet_uses_true_frame_indices():
    unet = tiny_unet()
    x = torch.randn(1, 4, 96, 8, 8)
    sparse = torch.tensor([[0, 12, 24, 36]])
    with torch.no_grad():
        out = unet(x, 500.0, position_ids=sparse).sample
        shifted = unet(x, 500.0, position_ids=sparse + 400).sample
        dense = unet(x, 500.0, position_ids=torch.arange(4)[None]).sample
        default = unet(x, 500.0).sample
    assert out.shape == (1, 4, 48, 8, 8)
    assert torch.allclose(out, shifted, atol=1e-4)  # shifting every index changes nothing
    assert (out - dense).abs().max() > 1e-3  # spacing matters
    assert torch.allclose(default, dense, atol=1e-6)  # no positions = consecutive frames


def test_state_dict_has_the_published_layout():
    keys = set(tiny_unet().state_dict())
    assert not any("add_embedding" in k or "add_time_proj" in k or "time_pos_embed" in k for k in keys)
    for name in ("conv_in.weight", "time_embedding.linear_1.weight", "conv_norm_out.weight", "conv_out.weight",
                 "down_blocks.0.resnets.0.spatial_res_block.conv1.weight",
                 "down_blocks.0.resnets.0.temporal_res_block.conv1.weight",
                 "down_blocks.0.resnets.0.time_mixer.mix_factor",
                 "down_blocks.0.attentions.0.time_mixer.mix_factor",
                 "down_blocks.0.attentions.0.temporal_transformer_blocks.0.attn1.to_q.weight",
                 "down_blocks.0.attentions.0.temporal_transformer_blocks.0.ff_in.net.0.proj.weight",
                 "down_blocks.0.attentions.0.transformer_blocks.0.attn2.to_k.weight",
                 "down_blocks.0.downsamplers.0.conv.weight", "mid_block.attentions.0.proj_out.weight",
                 "mid_block.resnets.1.temporal_res_block.conv2.weight", "up_blocks.0.upsamplers.0.conv.weight",
                 "up_blocks.1.attentions.1.temporal_transformer_blocks.0.norm3.weight"):
        assert name in keys, name


def test_published_config_and_fp16_weights_load(tmp_path):
    unet = tiny_unet(seed=3)
    unet.to(torch.float16).save_pretrained(tmp_path / "unet")
    config = json.loads((tmp_path / "unet" / "config.json").read_text())
    # the published config.json: the class name and SVD's keys, written by diffusers 0.30
    config.update(_class_name="UNetSpatioTemporalRopeConditionModel", _diffusers_version="0.30.3")
    assert {"addition_time_embed_dim", "projection_class_embeddings_input_dim", "num_frames"} <= set(config)
    (tmp_path / "unet" / "config.json").write_text(json.dumps(config))
    loaded, info = UNetSpatioTemporalRopeConditionModel.from_pretrained(tmp_path / "unet", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    ref = unet.float().state_dict()
    assert all(torch.equal(ref[k], v.float()) for k, v in loaded.float().state_dict().items())
    assert loaded.config.block_out_channels == TINY_UNET["block_out_channels"]


def test_space_to_depth_codec_is_exact_and_saves(tmp_path):
    codec = SpaceToDepthCodec(in_channels=3, patch_size=4)
    x = torch.randn(2, 3, 16, 16)
    z = codec.encode(x).latent_dist.mode()
    assert z.shape == (2, 48, 4, 4) and codec.latent_channels == 48
    assert torch.equal(codec.decode(z).sample, x)
    codec.save_pretrained(tmp_path / "vae")
    again = SpaceToDepthCodec.from_pretrained(tmp_path / "vae")
    assert again.config.patch_size == 4
