"""The published key-frame interpolation path, on tiny random components of the published classes."""

import pytest
import torch
from diffusers import AutoencoderKLTemporalDecoder, FlowMatchEulerDiscreteScheduler

from backends.common.errors import InputError
from backends.videodepth.interpolation import segments, stream_depth_interpolated
from backends.videodepth.networks import SCHEDULER_CONFIG
from backends.videodepth.pipeline import VideoDepthPipeline

from .conftest import tiny_pipeline, tiny_unet, tiny_video


def published_like():
    torch.manual_seed(0)
    vae = AutoencoderKLTemporalDecoder(block_out_channels=(32, 64), layers_per_block=1, latent_channels=4,
                                       down_block_types=("DownEncoderBlock2D",) * 2)
    pipe = VideoDepthPipeline(vae=vae, unet=tiny_unet(in_channels=8, out_channels=4),
                              unet_interp=tiny_unet(seed=1, in_channels=16, out_channels=4),
                              scheduler=FlowMatchEulerDiscreteScheduler(**SCHEDULER_CONFIG))
    pipe.set_progress_bar_config(disable=True)
    return pipe


def test_segments_cover_the_video_with_keys_at_both_ends():
    segs = segments(40, num_interp=16, overlap=6)
    assert segs[0] == (0, 18) and segs[1][0] == 12 and segs[-1][1] == 40
    assert segments(10, 16, 6) == [(0, 10)]
    with pytest.raises(InputError):
        segments(40, 4, 6)


def test_interpolated_stream_covers_every_frame_and_calls_the_interp_unet():
    pipe = published_like()
    calls = []
    pipe.unet_interp.register_forward_hook(lambda m, a, o: calls.append(a[0].shape))
    video = tiny_video(20, size=16)
    out = list(stream_depth_interpolated(pipe, lambda: iter(video), 20, num_interp=4, overlap=2,
                                         num_inference_steps=1))
    assert [i for i, _ in out] == list(range(20))
    assert all(d.shape == (16, 16) and 0 <= d.min() and d.max() <= 1 for _, d in out)
    assert calls and calls[0][2] == 16  # noise, rgb latent, masked key latents, mask
    with pytest.raises(InputError, match="key frames"):
        list(stream_depth_interpolated(pipe, lambda: iter(tiny_video(100, size=16)), 100, num_interp=4,
                                       overlap=2, max_keys=8))


def test_embedded_model_has_no_interpolation_network():
    with pytest.raises(InputError, match="no interpolation network"):
        list(stream_depth_interpolated(tiny_pipeline(), lambda: iter(tiny_video()), 4))
