"""What the Video Depth loader takes from the published Depth Any Video checkpoint, at full size.

``expected_format`` builds the modules ``loading.load_folder`` builds for ``hhyangcs/depth-any-video`` —
the project's :class:`UNetSpatioTemporalRopeConditionModel` for ``unet`` and ``unet_interp`` and diffusers'
``AutoencoderKLTemporalDecoder`` for ``vae`` — on the meta device (no memory), with the published
configs (``unet``: 8 input channels, ``unet_interp``: 16; the rest SVD's), and lists their state dicts.
``tests/backends/videodepth/test_published_formats.py`` compares that with the fixture recorded from the
authors' code (``training/published_formats/depth_any_video.py``).
"""

from __future__ import annotations

import torch

from backends.common.published_formats import Format, shapes_of

PUBLISHED_MODELS: tuple[str, ...] = ("depth-any-video",)

# The published unet/config.json, as the authors' pipeline needs it (see the fixture's source and notes).
_UNET = dict(
    in_channels=8, out_channels=4,
    down_block_types=("CrossAttnDownBlockSpatioTemporal",) * 3 + ("DownBlockSpatioTemporal",),
    up_block_types=("UpBlockSpatioTemporal",) + ("CrossAttnUpBlockSpatioTemporal",) * 3,
    block_out_channels=(320, 640, 1280, 1280), layers_per_block=2, cross_attention_dim=1024,
    transformer_layers_per_block=1, num_attention_heads=(5, 10, 20, 20), num_frames=25,
)
PUBLISHED_CONFIGS = {
    "unet": _UNET,
    "unet_interp": {**_UNET, "in_channels": 16},
    "vae": dict(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 4,
                block_out_channels=(128, 256, 512, 512), layers_per_block=2, latent_channels=4,
                scaling_factor=0.18215),
}


def expected_format(model_id: str) -> Format:
    """{component: {name: shape}} the project's modules hold for ``model_id``, built on the meta device."""
    if model_id not in PUBLISHED_MODELS:
        raise KeyError(f"no published format for {model_id!r}; known: {PUBLISHED_MODELS}")
    from diffusers import AutoencoderKLTemporalDecoder

    from .networks import UNetSpatioTemporalRopeConditionModel

    with torch.device("meta"):
        return {
            "unet": shapes_of(UNetSpatioTemporalRopeConditionModel(**PUBLISHED_CONFIGS["unet"]).state_dict()),
            "unet_interp": shapes_of(
                UNetSpatioTemporalRopeConditionModel(**PUBLISHED_CONFIGS["unet_interp"]).state_dict()),
            "vae": shapes_of(AutoencoderKLTemporalDecoder(**PUBLISHED_CONFIGS["vae"]).state_dict()),
        }
