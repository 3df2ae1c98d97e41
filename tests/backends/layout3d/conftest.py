"""Tiny random configs of the embedded model's classes (as diffusers' fast tests do)."""

import pytest
import torch


def tiny_pipeline(seed: int = 0, controlnet: bool = False):
    from diffusers import ControlNetModel, DDIMScheduler

    from backends.layout3d import networks as N
    from backends.layout3d.pipeline import BuildAScenePipeline

    torch.manual_seed(seed)
    tok = N.build_tokenizer()
    text = N.build_text_encoder(len(tok), hidden_size=16, intermediate_size=32, num_attention_heads=2,
                                projection_dim=16)
    vae = N.build_vae(block_out_channels=(8, 16), down_block_types=("DownEncoderBlock2D",) * 2,
                      up_block_types=("UpDecoderBlock2D",) * 2, norm_num_groups=4, sample_size=32)
    unet_kw = dict(sample_size=16, block_out_channels=(16, 32), norm_num_groups=8, cross_attention_dim=16,
                   attention_head_dim=4, down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
                   up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D"))
    unet = N.build_unet(in_channels=4 if controlnet else 4 + 4, **unet_kw)
    cn = ControlNetModel.from_unet(unet, conditioning_embedding_out_channels=(8, 8)) if controlnet else None
    sched = DDIMScheduler(**N.SCHEDULER_CONFIG)
    return BuildAScenePipeline(vae, text, tok, unet, sched, controlnet=cn, name="tiny-random")


@pytest.fixture
def tiny():
    return tiny_pipeline()
