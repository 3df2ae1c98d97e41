"""Tiny random configs of the classes the Text in Image tab runs, as diffusers' fast tests build them: (4, 8) channels.

* ``dummy_components``: the embedded model's classes (``AutoencoderKL``, ``UNet2DConditionModel`` with
  cross-attention at two resolutions, ``CLIPTextModel`` behind the character-level tokenizer);
* ``sdxl_unet`` / ``if_unet`` / ``sd3_transformer``: the published models' denoiser classes with
  SDXL's, DeepFloyd IF's and SD3's block types, and inputs to call them with.
"""

import pytest
import torch


def dummy_components(seed: int = 0) -> dict:
    """``TextEditPipeline(**dummy_components())``: 8×32 images, 4×16 latents, seven ``attn2`` layers."""
    from diffusers import DDIMScheduler

    from backends.textedit import networks as N

    torch.manual_seed(seed)
    tok = N.build_tokenizer()
    text = N.build_text_encoder(len(tok), hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                num_attention_heads=2, projection_dim=8)
    vae = N.build_vae(block_out_channels=(4, 8), down_block_types=("DownEncoderBlock2D",) * 2,
                      up_block_types=("UpDecoderBlock2D",) * 2, norm_num_groups=2, sample_size=[8, 32])
    unet = N.build_unet(sample_size=[4, 16], block_out_channels=(4, 8), norm_num_groups=2, cross_attention_dim=8,
                        attention_head_dim=2, down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
                        up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D"))
    return dict(vae=vae, text_encoder=text, tokenizer=tok, unet=unet, scheduler=DDIMScheduler(**N.SCHEDULER_CONFIG))


def tiny_pipeline(seed: int = 0):
    from backends.textedit.pipeline import TextEditPipeline

    pipe = TextEditPipeline(**dummy_components(seed))
    pipe.set_progress_bar_config(disable=True)
    return pipe


@pytest.fixture
def tiny():
    return tiny_pipeline()


@pytest.fixture(scope="module")
def tiny_model():
    """The actions' model loader answers with a tiny pipeline (the embedded model's preset and text rules)."""
    from backends.textedit import service
    from backends.textedit.loading import EMBEDDED_RULES
    from backends.textedit.models import PRESETS

    pipe = tiny_pipeline()
    patch = pytest.MonkeyPatch()
    patch.setattr(service, "load_pipeline", lambda model="textedit-embedded": (pipe, PRESETS[model], EMBEDDED_RULES))
    yield pipe
    patch.undo()


def sdxl_unet():
    """SDXL's UNet layout at (4, 8): text-time added conditioning, 1 and 2 transformer layers per block."""
    from diffusers import UNet2DConditionModel

    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=2, block_out_channels=(4, 8),
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        attention_head_dim=(2, 4), use_linear_projection=True, addition_embed_type="text_time",
        addition_time_embed_dim=8, transformer_layers_per_block=(1, 2), projection_class_embeddings_input_dim=56,
        cross_attention_dim=8, norm_num_groups=1)
    return unet.eval()


def sdxl_inputs(seed: int = 0, text_seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    t = torch.Generator().manual_seed(text_seed)
    return dict(sample=torch.randn(2, 4, 8, 8, generator=g), timestep=torch.tensor(500),
                encoder_hidden_states=torch.randn(2, 6, 8, generator=t),
                added_cond_kwargs={"text_embeds": torch.randn(2, 8, generator=g), "time_ids": torch.ones(2, 6)})


def if_unet():
    """DeepFloyd IF stage I's UNet layout at (4, 8): SimpleCrossAttn blocks with added text K/V."""
    from diffusers import UNet2DConditionModel

    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        sample_size=8, layers_per_block=1, block_out_channels=(4, 8),
        down_block_types=("ResnetDownsampleBlock2D", "SimpleCrossAttnDownBlock2D"),
        mid_block_type="UNetMidBlock2DSimpleCrossAttn",
        up_block_types=("SimpleCrossAttnUpBlock2D", "ResnetUpsampleBlock2D"),
        in_channels=3, out_channels=6, cross_attention_dim=32, encoder_hid_dim=8, attention_head_dim=2,
        addition_embed_type="text", addition_embed_type_num_heads=2, cross_attention_norm="group_norm",
        resnet_time_scale_shift="scale_shift", act_fn="gelu", norm_num_groups=2)
    return unet.eval()


def if_inputs(seed: int = 0, text_seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    t = torch.Generator().manual_seed(text_seed)
    return dict(sample=torch.randn(2, 3, 8, 8, generator=g), timestep=torch.tensor(500),
                encoder_hidden_states=torch.randn(2, 6, 8, generator=t))


def sd3_transformer():
    """SD3's MMDiT at (4, 8)-sized widths: joint attention in every block, the last one context-pre-only."""
    from diffusers import SD3Transformer2DModel

    torch.manual_seed(0)
    return SD3Transformer2DModel(sample_size=8, patch_size=1, in_channels=4, num_layers=3, attention_head_dim=4,
                                 num_attention_heads=2, caption_projection_dim=8, joint_attention_dim=8,
                                 pooled_projection_dim=8, out_channels=4).eval()


def sd3_inputs(seed: int = 0, text_seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    t = torch.Generator().manual_seed(text_seed)
    return dict(hidden_states=torch.randn(2, 4, 8, 8, generator=g), timestep=torch.tensor([500, 500]),
                encoder_hidden_states=torch.randn(2, 6, 8, generator=t),
                pooled_projections=torch.randn(2, 8, generator=g))


def _clip_config(tok, **kw):
    from transformers import CLIPTextConfig

    return CLIPTextConfig(vocab_size=len(tok), hidden_size=4, intermediate_size=8, num_hidden_layers=2,
                          num_attention_heads=2, max_position_embeddings=32, pad_token_id=0, bos_token_id=2,
                          eos_token_id=3, **kw)


def _tiny_vae(**kw):
    from diffusers import AutoencoderKL

    return AutoencoderKL(block_out_channels=(4, 8), down_block_types=("DownEncoderBlock2D",) * 2,
                         up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4, norm_num_groups=2,
                         sample_size=16, **kw)


def sdxl_pipeline():
    """diffusers' ``StableDiffusionXLPipeline`` of tiny random components (the char tokenizer stands in for CLIP's)."""
    from diffusers import DDIMScheduler, StableDiffusionXLPipeline
    from transformers import CLIPTextModel, CLIPTextModelWithProjection

    from backends.textedit import networks as N

    tok = N.build_tokenizer()
    torch.manual_seed(0)
    te, te2 = CLIPTextModel(_clip_config(tok)), CLIPTextModelWithProjection(_clip_config(tok, projection_dim=8))
    return StableDiffusionXLPipeline(vae=_tiny_vae(), text_encoder=te, text_encoder_2=te2, tokenizer=tok,
                                     tokenizer_2=tok, unet=sdxl_unet(), scheduler=DDIMScheduler(),
                                     force_zeros_for_empty_prompt=False)


def sd3_pipeline():
    """diffusers' ``StableDiffusion3Pipeline`` of tiny random components (no T5: its embeddings are zeros)."""
    from diffusers import FlowMatchEulerDiscreteScheduler, StableDiffusion3Pipeline
    from transformers import CLIPTextModelWithProjection

    from backends.textedit import networks as N

    tok = N.build_tokenizer()
    torch.manual_seed(0)
    te, te2 = (CLIPTextModelWithProjection(_clip_config(tok, projection_dim=4)) for _ in range(2))
    return StableDiffusion3Pipeline(transformer=sd3_transformer(), scheduler=FlowMatchEulerDiscreteScheduler(),
                                    vae=_tiny_vae(shift_factor=0.0609, scaling_factor=1.5035), text_encoder=te,
                                    tokenizer=tok, text_encoder_2=te2, tokenizer_2=tok, text_encoder_3=None,
                                    tokenizer_3=None)


def if_pipeline():
    """diffusers' ``IFPipeline`` (stage I) of tiny random components (a tiny T5 encoder)."""
    from diffusers import DDPMScheduler, IFPipeline
    from transformers import T5Config, T5EncoderModel

    from backends.textedit import networks as N

    tok = N.build_tokenizer()
    torch.manual_seed(0)
    t5 = T5EncoderModel(T5Config(vocab_size=len(tok), d_model=8, d_kv=4, d_ff=16, num_layers=1, num_heads=2,
                                 pad_token_id=0, eos_token_id=3)).eval()
    return IFPipeline(tokenizer=tok, text_encoder=t5, unet=if_unet(), scheduler=DDPMScheduler(), safety_checker=None,
                      feature_extractor=None, watermarker=None, requires_safety_checker=False)
