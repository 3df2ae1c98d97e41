"""The published key-frame interpolation path, on tiny random components of the published classes."""

import numpy as np
import pytest
import torch
from diffusers import AutoencoderKLTemporalDecoder, FlowMatchEulerDiscreteScheduler

from backends.common.errors import InputError
from backends.common.progress import CancelToken
from backends.videodepth.interpolation import key_latents, key_plan, segments, stream_depth_interpolated
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
    # strictly inside (0, 1) and not flat: the fitted scale and shift placed every frame, the clip cut nothing
    assert all(d.shape == (16, 16) and 0 < d.min() and d.max() < 1 and d.std() > 0.01 for _, d in out)
    assert calls and calls[0][2] == 16  # noise, rgb latent, masked key latents, mask


def test_more_key_frames_than_one_call_holds_are_grouped_on_one_scale():
    pipe = published_like()
    sizes = []
    pipe.unet.register_forward_hook(lambda m, a, o: sizes.append(a[0].shape[1]))
    video = tiny_video(60, size=16)
    keys = key_plan(60, 4, 2)
    assert len(keys) > 8
    out = list(stream_depth_interpolated(pipe, lambda: iter(video), 60, num_interp=4, overlap=2, max_keys=8,
                                         num_inference_steps=1))
    assert [i for i, _ in out] == list(range(60)) and max(sizes) <= 8


def test_grouped_key_frames_are_fitted_to_the_groups_before_them():
    from backends.videodepth.pipeline import VideoDepthOutput

    pipe = tiny_pipeline()
    truth = np.random.default_rng(0).uniform(0.2, 0.8, (12, 16, 16))
    gains = iter([(1.0, 0.0), (0.5, 0.3), (1.4, -0.2), (0.8, 0.1)])

    class EachCallItsOwnScale:  # every joint call returns the truth under its own unknown scale and shift
        def __init__(self):
            self.encode, self.device, self.calls = pipe.encode, pipe.device, []

        def __call__(self, rgb, position_ids, **kw):
            self.calls.append(len(rgb))
            a, b = next(gains)
            return VideoDepthOutput(disparity=(a * truth[np.asarray(position_ids)] + b).astype(np.float32))

    fake = EachCallItsOwnScale()
    lat = key_latents(fake, tiny_video(12, size=16), list(range(12)), max_keys=6, num_inference_steps=1, seed=0)
    assert max(fake.calls) <= 6 and len(fake.calls) > 2
    assert np.allclose(pipe.decode(lat[None]).numpy(), truth, atol=1e-4)  # one scale: the first group's
    with pytest.raises(InputError, match="groups"):
        key_latents(pipe, tiny_video(12, size=16), list(range(12)), max_keys=3, num_inference_steps=1, seed=0)


def test_interpolated_stream_resumes_with_the_same_frames():
    from backends.common.errors import Cancelled

    pipe = published_like()
    video = tiny_video(30, size=16)
    kw = dict(num_interp=4, overlap=2, num_inference_steps=1)
    whole = dict(stream_depth_interpolated(pipe, lambda: iter(video), 30, **kw))
    states, token = [], CancelToken()
    got = {}

    def saved(state):  # Stop once two segments are done
        states.append(state)
        if len(states) >= 2:
            token.cancel()

    with pytest.raises(Cancelled):
        for i, d in stream_depth_interpolated(pipe, lambda: iter(video), 30, on_state=saved, cancel=token, **kw):
            got[i] = d
    assert states and 0 < states[-1].emitted < 30
    rest = dict(stream_depth_interpolated(pipe, lambda: iter(video), 30, resume=states[-1], **kw))
    assert min(rest) == states[-1].emitted
    assert all(np.array_equal({**got, **rest}[i], whole[i]) for i in range(30))


def test_embedded_model_has_no_interpolation_network():
    with pytest.raises(InputError, match="no interpolation network"):
        list(stream_depth_interpolated(tiny_pipeline(), lambda: iter(tiny_video()), 4))


def test_stop_acts_inside_a_segments_unet_call():
    from backends.common.errors import Cancelled

    pipe = published_like()
    steps, segments_started, token = [], [], CancelToken()
    pipe.unet_interp.register_forward_hook(lambda *_: steps.append(1))

    def started(*_):  # Stop pressed once the first segment's second step has begun
        segments_started.append(1)
        if len(segments_started) >= 2:
            token.cancel()

    pipe.unet_interp.down_blocks[0].resnets[0].register_forward_hook(started)
    with pytest.raises(Cancelled):
        list(stream_depth_interpolated(pipe, lambda: iter(tiny_video(30, size=16)), 30, num_interp=4, overlap=2,
                                       num_inference_steps=3, cancel=token))
    assert len(steps) == 1  # the second step ended inside the network, the third never ran
