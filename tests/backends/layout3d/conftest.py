"""Tiny random configs of the embedded model's classes, as diffusers' fast tests build them: (4, 8) channels."""

import pytest
import torch


def dummy_components(controlnet: bool = False, seed: int = 0) -> dict:
    """``BuildAScenePipeline(**dummy_components())``: 32×32 images, 16×16 latents, attention at 16² and 8²."""
    from diffusers import ControlNetModel, DDIMScheduler

    from backends.layout3d import networks as N

    torch.manual_seed(seed)
    tok = N.build_tokenizer()
    text = N.build_text_encoder(len(tok), hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                num_attention_heads=2, projection_dim=8)
    vae = N.build_vae(block_out_channels=(4, 8), down_block_types=("DownEncoderBlock2D",) * 2,
                      up_block_types=("UpDecoderBlock2D",) * 2, norm_num_groups=2, sample_size=32)
    unet = N.build_unet(in_channels=4 if controlnet else 4 + 2 ** 2, sample_size=16, block_out_channels=(4, 8),
                        norm_num_groups=2, cross_attention_dim=8, attention_head_dim=2,
                        down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
                        up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D"))
    cn = None
    if controlnet:
        cn = ControlNetModel.from_unet(unet, conditioning_embedding_out_channels=(4, 8))
        zero_convs = [*cn.controlnet_down_blocks, cn.controlnet_mid_block, cn.controlnet_cond_embedding.conv_out]
        for zero_conv in zero_convs:  # random, as diffusers' tests do: zero convolutions hide the depth
            torch.nn.init.normal_(zero_conv.weight)
            torch.nn.init.zeros_(zero_conv.bias)
    return dict(vae=vae, text_encoder=text, tokenizer=tok, unet=unet, scheduler=DDIMScheduler(**N.SCHEDULER_CONFIG),
                controlnet=cn)


def tiny_pipeline(seed: int = 0, controlnet: bool = False):
    from backends.layout3d.pipeline import BuildAScenePipeline

    pipe = BuildAScenePipeline(**dummy_components(controlnet, seed))
    pipe.set_progress_bar_config(disable=True)
    return pipe


@pytest.fixture
def tiny():
    return tiny_pipeline()
