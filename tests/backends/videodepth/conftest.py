"""Tiny random configs of the Video Depth classes (diffusers' fast-test manner).

SVD's spatio-temporal blocks hard-code 32-group GroupNorms, so the smallest config has (32, 64)
channels rather than diffusers' usual (4, 8).
"""

TINY_UNET = dict(
    sample_size=8, in_channels=96, out_channels=48, block_out_channels=(32, 64),
    down_block_types=("CrossAttnDownBlockSpatioTemporal", "DownBlockSpatioTemporal"),
    up_block_types=("UpBlockSpatioTemporal", "CrossAttnUpBlockSpatioTemporal"),
    num_attention_heads=(2, 4), cross_attention_dim=8, layers_per_block=1, num_frames=4,
)


def tiny_unet(seed: int = 0, **overrides):
    import torch

    from backends.videodepth.networks import UNetSpatioTemporalRopeConditionModel

    torch.manual_seed(seed)
    return UNetSpatioTemporalRopeConditionModel(**{**TINY_UNET, **overrides}).eval()


def tiny_pipeline(seed: int = 0, interp: bool = False):
    """``VideoDepthPipeline`` on a tiny UNet and the 4×4 space-to-depth codec: frames a multiple of 8; with
    ``interp`` also a tiny interpolation UNet (4 × 48 input channels), as the embedded model has."""
    from diffusers import FlowMatchEulerDiscreteScheduler

    from backends.videodepth.networks import SCHEDULER_CONFIG, SpaceToDepthCodec
    from backends.videodepth.pipeline import VideoDepthPipeline

    pipe = VideoDepthPipeline(vae=SpaceToDepthCodec(3, 4), unet=tiny_unet(seed),
                              scheduler=FlowMatchEulerDiscreteScheduler(**SCHEDULER_CONFIG),
                              unet_interp=tiny_unet(seed + 1, in_channels=4 * TINY_UNET["out_channels"]) if interp else None)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def tiny_video(frames: int = 4, size: int = 16, seed: int = 0):
    import numpy as np

    return np.random.default_rng(seed).integers(0, 256, (frames, size, size, 3), dtype=np.uint8)
