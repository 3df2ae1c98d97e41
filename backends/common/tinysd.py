"""What the embedded 3D Layout and Text in Image models share: a tiny CLIP text encoder behind a
word-level tokenizer, and Stable Diffusion's noise schedule; and what every user of the 3D Layout model
(3D Layout, Unlearning's text-conditioned teacher) needs to call its UNet: prompt embeddings and the box depth
as the UNet's extra channels.

Both are ordinary transformers/diffusers classes at tiny sizes; the capabilities differ in their
vocabularies, tokenizer splitting, VAE and UNet (their own ``networks.py``), not in these. Torch and the
model packages are imported where used: building the app must not load them.
"""

from __future__ import annotations

VOCAB_SPECIAL = ("[PAD]", "[UNK]", "[BOS]", "[EOS]")  # ids 0-3, the ids the text encoder's config names
MAX_TOKENS = 32
DEPTH_UNSHUFFLE = 4  # the 3D Layout UNet: 64×64 box depth → 16 extra input channels at 16×16

TEXT_CONFIG = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                   max_position_embeddings=MAX_TOKENS, projection_dim=64)

# SD's schedule: scaled-linear β 0.00085–0.012, 1000 steps, ε-prediction (sampled with DDIM)
SCHEDULER_CONFIG = dict(num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                        clip_sample=False, set_alpha_to_one=False, prediction_type="epsilon", steps_offset=1)


def build_word_tokenizer(vocabulary: list[str], pre_tokenizer):
    """A word-level ``PreTrainedTokenizerFast`` (lowercased, ``[BOS] … [EOS]``, ``MAX_TOKENS`` long) whose token
    ids are the positions in ``vocabulary`` (which starts with ``VOCAB_SPECIAL``), splitting text with
    ``pre_tokenizer``; saved and loaded like any transformers tokenizer."""
    from tokenizers import Tokenizer, models, normalizers, processors
    from transformers import PreTrainedTokenizerFast

    if tuple(vocabulary[: len(VOCAB_SPECIAL)]) != VOCAB_SPECIAL:
        raise ValueError(f"the vocabulary must start with {VOCAB_SPECIAL} (the ids the text encoder's config names)")
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocabulary)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizer
    tok.post_processor = processors.TemplateProcessing(single="[BOS] $A [EOS]", special_tokens=[("[BOS]", 2), ("[EOS]", 3)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", bos_token="[BOS]",
                                   eos_token="[EOS]", model_max_length=MAX_TOKENS)


def build_text_encoder(vocab_size: int, **overrides):
    """A ``CLIPTextModel`` of ``TEXT_CONFIG`` (``overrides`` replace its entries) over ``vocab_size`` tokens."""
    from transformers import CLIPTextConfig, CLIPTextModel

    cfg = {**TEXT_CONFIG, **overrides}
    return CLIPTextModel(CLIPTextConfig(vocab_size=vocab_size, pad_token_id=0, bos_token_id=2, eos_token_id=3, **cfg))


def build_scheduler(kind: str = "ddim"):
    """The sampling (``ddim``) or training (``ddpm``) scheduler on SD's noise schedule."""
    from diffusers import DDIMScheduler, DDPMScheduler

    if kind == "ddim":
        return DDIMScheduler(**SCHEDULER_CONFIG)
    if kind == "ddpm":
        return DDPMScheduler(**{k: v for k, v in SCHEDULER_CONFIG.items() if k != "set_alpha_to_one"})
    raise ValueError(f"unknown scheduler kind {kind!r} (ddim or ddpm)")


def encode_prompts(tokenizer, text_encoder, prompts: list[str]):
    """B×L×D hidden states of ``prompts`` (padded to the tokenizer's ``model_max_length``)."""
    ids = tokenizer(prompts, padding="max_length", max_length=tokenizer.model_max_length, truncation=True,
                    return_tensors="pt").input_ids
    return text_encoder(ids.to(text_encoder.device))[0]


def depth_channels(depth, factor: int = DEPTH_UNSHUFFLE):
    """B×1×H×W depth in [0, 1] → B×factor²×H/f×W/f, centred at 0 (what the 3D Layout UNet's extra channels take:
    pixel-unshuffle, so no depth detail is lost)."""
    import torch.nn.functional as F

    return F.pixel_unshuffle(depth * 2 - 1, factor)
