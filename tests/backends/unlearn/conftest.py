"""A tiny, untrained teacher (seconds to train against) shared by the Unlearning training tests."""

import pytest


@pytest.fixture(scope="session")
def tiny_teacher(tmp_path_factory):
    """(network, folder, fingerprint) of a small LabelUNet saved like the shipped teacher."""
    import torch

    from backends.unlearn.loading import fingerprint
    from backends.unlearn.networks import LabelUNet

    torch.manual_seed(0)
    net = LabelUNet(channels=(8, 16, 16))
    for p in net.out.parameters():  # not zero: an untrained net whose ε depends on its input
        torch.nn.init.normal_(p, std=0.02)
    folder = tmp_path_factory.mktemp("tiny-teacher")
    net.save(folder)
    return net.requires_grad_(False), folder, fingerprint(folder)


@pytest.fixture(scope="session")
def tiny_text_teacher():
    """A :class:`TextTeacher` of tiny random diffusers / transformers parts shaped like the 3D Layout model's (64×64
    images ↔ 4×16×16 latents, 16 box-depth channels, a word-level tokenizer of the domain) and SD's schedule: the
    text-teacher tests run in seconds. (teacher, a tiny untrained detector of the 40 classes + nothing)."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
    from tokenizers import pre_tokenizers

    from backends.common.cnn import SmallClassifier
    from backends.common.tinysd import (
        SCHEDULER_CONFIG,
        VOCAB_SPECIAL,
        build_text_encoder,
        build_word_tokenizer,
    )
    from backends.synth.detector import CLASSES, CROP
    from backends.synth.scene import COLORS, ROOMS, SHAPES
    from backends.unlearn.text.teacher import TextTeacher

    torch.manual_seed(0)
    words = sorted({"a", "an", "in", ","} | set(COLORS) | set(SHAPES) | {w for r in ROOMS for w in r.prompt.split()})
    tok = build_word_tokenizer(list(VOCAB_SPECIAL) + words, pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]))
    text = build_text_encoder(len(tok), hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                              num_attention_heads=2, projection_dim=8)
    unet = UNet2DConditionModel(sample_size=16, in_channels=4 + 16, out_channels=4, layers_per_block=1,
                                block_out_channels=(4, 8), norm_num_groups=2, cross_attention_dim=8,
                                attention_head_dim=2, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
    vae = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, sample_size=64, layers_per_block=1,
                        block_out_channels=(4, 4, 4), norm_num_groups=2,
                        down_block_types=("DownEncoderBlock2D",) * 3, up_block_types=("UpDecoderBlock2D",) * 3)
    abar = DDIMScheduler(**SCHEDULER_CONFIG).alphas_cumprod
    teacher = TextTeacher(unet, text, tok, vae, abar, "tiny0text0teach")
    detector = SmallClassifier(num_classes=len(CLASSES), width=4, image_size=CROP).eval().requires_grad_(False)
    return teacher, detector
