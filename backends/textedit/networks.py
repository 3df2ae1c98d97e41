"""The embedded text-in-image model: ordinary diffusers/transformers classes at tiny sizes.

* ``AutoencoderKL`` 32×128×3 ↔ 8×32×4 latents (a wide strip, the shape of a written word);
* ``UNet2DConditionModel`` on 8×32 latents (optionally plus eight fixed **column planes**, sin/cos of
  the column at 1, 2, 4 and 8 cycles per width: the convolutions alone hardly know where in the strip
  they are, and which letter of the word a column should show depends on exactly that), with cross-attention at 8×32 and 4×16 on the way down,
  at 2×8 in the middle and at 4×16 and 8×32 on the way up — seven ``attn2`` layers at three
  resolutions (4 heads each), so the localization scan has several candidates to tell apart; 1.5 M
  parameters, sized so that a few thousand training steps fit in two hours on one CPU core;
* ``CLIPTextModel`` (the tiny text encoder of ``backends/common/tinysd.py``, as in 3D Layout) behind a **character-level** tokenizer:
  the template words are word tokens, the text between quotes is split into single characters, so
  the spelling of the word has to pass through cross-attention, as in the paper's models. A text
  encoder with ``max_position_embeddings >= 2 * MAX_TOKENS`` takes **character positions**: the
  i-th quoted character gets position id ``MAX_TOKENS + i`` whatever the template before it, so
  "letter i of the word" is one learned embedding (:func:`position_ids`);
* SD's noise schedule (scaled-linear β 0.00085–0.012, 1000 steps, ε-prediction), sampled with DDIM.

The model writes words of 3–8 letters a–z, drawn in capitals (the tokenizer lowercases).
"""

from __future__ import annotations

import math
import re
import string
from typing import TYPE_CHECKING

from backends.common.tinysd import (
    MAX_TOKENS,
    SCHEDULER_CONFIG,
    TEXT_CONFIG,
    VOCAB_SPECIAL,
    build_scheduler,
    build_text_encoder,
)

if TYPE_CHECKING:  # torch is imported where it is used: building the tab must not load it
    import torch

__all__ = ["ALPHABET", "IMAGE_SIZE", "LATENT_SIZE", "MAX_TOKENS", "POSITION_PLANES", "PROMPT_WORDS",
           "SCHEDULER_CONFIG", "TEXT_CONFIG", "UNET_CONFIG", "VAE_CONFIG", "build_scheduler", "build_text_encoder", "build_tokenizer", "build_unet",
           "build_vae", "column_planes", "encode_prompts", "latent_channels", "position_ids", "quoted_text",
           "uses_character_positions", "unet_input"]

IMAGE_SIZE = (32, 128)  # H, W — RapidOCR reads clean renders of this size (upscaled) without error
LATENT_FACTOR = 4
LATENT_SIZE = (IMAGE_SIZE[0] // LATENT_FACTOR, IMAGE_SIZE[1] // LATENT_FACTOR)
ALPHABET = string.ascii_lowercase  # the characters the model can write (shown as capitals)
MIN_LETTERS, MAX_LETTERS = 3, 8

# Words of the prompt templates ("a brick wall that says "...""), each one token.
PROMPT_WORDS = ("a", "an", "the", "sign", "shirt", "t-shirt", "wall", "brick", "label", "poster", "banner",
                "sticker", "board", "wooden", "paper", "that", "says", "with", "text", "word", "reads", "on",
                "of", "written", "printed", "painted")
PUNCTUATION = ('"', ".", ",", "-", ":")

VAE_CONFIG = dict(
    in_channels=3, out_channels=3, latent_channels=4, sample_size=list(IMAGE_SIZE), layers_per_block=1,
    down_block_types=("DownEncoderBlock2D",) * 3, up_block_types=("UpDecoderBlock2D",) * 3,
    block_out_channels=(32, 64, 64), norm_num_groups=16,
)

POSITION_PLANES = 8  # sin/cos of the latent column at 1, 2, 4, 8 cycles per width (8 cycles ≈ one letter)

# Latents only by default (the first recipe); the shipped UNet is built with ``in_channels=4 + POSITION_PLANES``,
# which adds the column planes (training flags in assets/textedit-embedded/README.md).
UNET_CONFIG = dict(
    sample_size=list(LATENT_SIZE), in_channels=4, out_channels=4, layers_per_block=1,
    down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"),
    up_block_types=("UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"),
    block_out_channels=(32, 64, 64), cross_attention_dim=64, attention_head_dim=4, norm_num_groups=16,
)

# A letter or digit followed by exactly one more quote: it stands between the (last) pair of quotes.
_QUOTED_CHAR = r'[a-z0-9](?=[^"]*"[^"]*$)'


def quoted_text(prompt: str) -> str | None:
    """The text between the last pair of double quotes of ``prompt`` (``None`` without quotes)."""
    found = re.findall(r'"([^"]*)"', prompt)
    return found[-1] if found else None


def vocabulary() -> list[str]:
    return list(VOCAB_SPECIAL) + list(PUNCTUATION) + [w for w in PROMPT_WORDS if w not in ALPHABET] + list(ALPHABET)


def build_tokenizer():
    """Character-level inside quotes, word-level outside: a ``PreTrainedTokenizerFast`` (saves/loads as usual).

    ``a sign that says "Cat"`` → ``[BOS] a sign that says " c a t " [EOS]``.
    """
    from tokenizers import Regex, pre_tokenizers

    from backends.common.tinysd import build_word_tokenizer

    return build_word_tokenizer(vocabulary(), pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(_QUOTED_CHAR), behavior="isolated"),
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Split(Regex(r'[".,:]'), behavior="isolated"),
    ]))


def uses_character_positions(text_encoder) -> bool:
    """Whether ``text_encoder`` was trained with :func:`position_ids` (it has room for them), else plain 0…n-1."""
    return text_encoder.config.max_position_embeddings >= 2 * MAX_TOKENS


def position_ids(ids: torch.Tensor, quote_id: int) -> torch.Tensor:
    """Position ids for token ``ids`` (B×L): 0…L-1, except that the tokens after the first quote take
    ``MAX_TOKENS + i`` (i = 0 for the first character, the closing quote gets the word's length).

    Template prefixes differ in length ("a sign that says" vs "a brick wall that says"), so with plain
    positions the same letter index sits at different ids; this way the cross-attention can match a
    column of the image to "letter i" directly.
    """
    import torch

    plain = torch.arange(ids.shape[1], device=ids.device).expand_as(ids)
    is_quote = ids == quote_id
    opened = is_quote.cumsum(dim=1)  # 1 from the opening quote on, 2 from the closing one
    first = torch.where(is_quote.any(dim=1), is_quote.float().argmax(dim=1), torch.full_like(ids[:, 0], ids.shape[1]))
    inside = (opened == 1) & ~is_quote | (opened == 2) & is_quote  # the characters and the closing quote
    char_index = plain - first[:, None] - 1
    return torch.where(inside, MAX_TOKENS + char_index, plain)


def encode_prompts(tokenizer, text_encoder, prompts: list[str]) -> torch.Tensor:
    """B×L×D hidden states of ``prompts`` (padded to ``MAX_TOKENS``), with character positions when the
    encoder was trained with them."""
    ids = tokenizer(prompts, padding="max_length", max_length=tokenizer.model_max_length, truncation=True,
                    return_tensors="pt").input_ids.to(text_encoder.device)
    if not uses_character_positions(text_encoder):
        return text_encoder(ids)[0]
    return text_encoder(ids, position_ids=position_ids(ids, tokenizer.convert_tokens_to_ids('"')))[0]


def build_vae(**overrides):
    from diffusers import AutoencoderKL

    return AutoencoderKL(**{**VAE_CONFIG, **overrides})


def build_unet(**overrides):
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(**{**UNET_CONFIG, **overrides})


def latent_channels(unet) -> int:
    """The channels of the noise the UNet denoises (its input minus the column planes, when it takes them)."""
    c = unet.config
    return c.in_channels - POSITION_PLANES if c.in_channels == c.out_channels + POSITION_PLANES else c.in_channels


def column_planes(height: int, width: int, like: torch.Tensor) -> torch.Tensor:
    """1×8×H×W: sin and cos of 2π·f·(column + ½)/W for f = 1, 2, 4, 8 (the same on every row)."""
    import torch

    u = (torch.arange(width, dtype=torch.float32) + 0.5) / width
    angles = 2 * math.pi * torch.tensor([1.0, 2.0, 4.0, 8.0])[:, None] * u[None]
    planes = torch.cat([angles.sin(), angles.cos()])[None, :, None, :].expand(1, POSITION_PLANES, height, width)
    return planes.to(device=like.device, dtype=like.dtype)


def unet_input(unet, latents: torch.Tensor) -> torch.Tensor:
    """What ``unet`` is called with: ``latents``, plus the column planes if its ``conv_in`` expects them."""
    if unet.config.in_channels != latents.shape[1] + POSITION_PLANES:
        return latents
    import torch

    b, _, h, w = latents.shape
    return torch.cat([latents, column_planes(h, w, latents).expand(b, -1, -1, -1)], dim=1)
