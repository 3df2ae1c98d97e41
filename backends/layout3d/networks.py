"""The embedded Build-A-Scene model: ordinary diffusers/transformers classes at tiny sizes.

* ``AutoencoderKL`` 64×64×3 ↔ 16×16×4 latents (the small latent space that makes 64×64 output
  trainable on a CPU);
* ``UNet2DConditionModel`` on 16×16 latents, self- and cross-attention at 16×16 and 8×8 (so the
  DSA processors act where the boxes are resolved); the box depth enters by channel concatenation,
  64×64 → 16 channels at 16×16 by pixel-unshuffle, so no depth detail is lost;
* ``CLIPTextModel`` with a word-level tokenizer of the domain's vocabulary, trained with the UNet (both built
  by ``backends/common/tinysd.py``, which Text in Image shares);
* SD's noise schedule (scaled-linear β 0.00085–0.012, 1000 steps, ε-prediction), sampled with DDIM.
"""

from __future__ import annotations

from backends.common.tinysd import (
    DEPTH_UNSHUFFLE,
    MAX_TOKENS,
    SCHEDULER_CONFIG,
    TEXT_CONFIG,
    VOCAB_SPECIAL,
    build_text_encoder,
    depth_channels,
    encode_prompts,
)

__all__ = ["DEPTH_UNSHUFFLE", "MAX_TOKENS", "SCHEDULER_CONFIG", "TEXT_CONFIG", "UNET_CONFIG", "VAE_CONFIG", "VOCAB_SPECIAL",
           "build_text_encoder", "build_tokenizer", "build_unet", "build_vae", "depth_channels", "domain_vocabulary",
           "encode_prompts", "split_words"]

VAE_CONFIG = dict(
    in_channels=3, out_channels=3, latent_channels=4, sample_size=64, layers_per_block=1,
    down_block_types=("DownEncoderBlock2D",) * 3, up_block_types=("UpDecoderBlock2D",) * 3,
    block_out_channels=(32, 64, 64), norm_num_groups=16,
)

UNET_CONFIG = dict(
    sample_size=16, in_channels=4 + DEPTH_UNSHUFFLE ** 2, out_channels=4, layers_per_block=1,
    down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"),
    up_block_types=("UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"),
    block_out_channels=(64, 128, 128), cross_attention_dim=64, attention_head_dim=8, norm_num_groups=32,
)


def domain_vocabulary() -> list[str]:
    """Every word the embedded prompts use (rooms, colours, shapes, articles), sorted."""
    from backends.synth.scene import COLORS, ROOMS, SHAPES

    words = {"a", "an", "in", ","}
    for text in [r.prompt for r in ROOMS] + list(COLORS) + list(SHAPES):
        words.update(split_words(text))
    return sorted(words)


def split_words(text: str) -> list[str]:
    return text.lower().replace(",", " , ").split()


def build_tokenizer(vocabulary: list[str] | None = None):
    """A word-level ``PreTrainedTokenizerFast`` (saved and loaded like any transformers tokenizer)."""
    from tokenizers import pre_tokenizers

    from backends.common.tinysd import build_word_tokenizer

    words = list(VOCAB_SPECIAL) + (vocabulary or domain_vocabulary())
    return build_word_tokenizer(words, pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]))


def build_vae(**overrides):
    from diffusers import AutoencoderKL

    return AutoencoderKL(**{**VAE_CONFIG, **overrides})


def build_unet(**overrides):
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(**{**UNET_CONFIG, **overrides})
