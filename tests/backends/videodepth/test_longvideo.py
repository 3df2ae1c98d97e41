"""Streaming long-video depth: window plan, key-frame alignment, stitching and bounded memory."""

import numpy as np
import pytest
import torch

from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken
from backends.videodepth.longvideo import WindowPlan, stream_depth

from .conftest import tiny_pipeline, tiny_video


def test_window_plan_covers_every_frame_with_overlaps():
    plan = WindowPlan(40, window=16, overlap=4)
    wins = plan.windows
    assert wins[0] == (0, 16) and wins[-1][1] == 40
    covered = np.zeros(40, int)
    for s, e in wins:
        covered[s:e] += 1
    assert covered.min() >= 1
    assert all(b[0] < a[1] - 3 for a, b in zip(wins, wins[1:], strict=False))  # ≥ overlap shared frames
    assert plan.key_frames[0] == 0 and plan.key_frames[-1] == 39
    assert len(WindowPlan(1000, 16, 4, max_keys=8).key_frames) == 8
    assert WindowPlan(5, 16, 4).windows == [(0, 5)]
    with pytest.raises(InputError):
        WindowPlan(0)
    with pytest.raises(InputError):
        WindowPlan(10, window=4, overlap=4)


def test_short_clip_is_one_joint_call():
    pipe = tiny_pipeline()
    video = tiny_video(4)
    got = np.stack([d for _, d in stream_depth(pipe, lambda: iter(video), 4, window=8, overlap=2,
                                                num_inference_steps=2, seed=3)])
    want = pipe(video, position_ids=np.arange(4), num_inference_steps=2,
                generator=torch.Generator().manual_seed(3 * 100_003)).disparity
    assert np.allclose(got, want)


def test_long_clip_streams_in_order_with_bounded_memory():
    pipe = tiny_pipeline()
    video = tiny_video(23, seed=1)
    pulled, held = [0], []

    def frames():
        for f in video:
            pulled[0] += 1
            yield f

    out, progress = [], []
    for i, d in stream_depth(pipe, frames, 23, window=6, overlap=2, num_inference_steps=1,
                             on_window=lambda a, b: progress.append((a, b))):
        out.append(i)
        # strictly inside (0, 1) and not flat: the alignment placed every frame, the clip cut nothing
        assert d.shape == (16, 16) and 0 < d.min() and d.max() < 1 and d.std() > 0.01
        held.append(pulled[0] - len(out))
    assert out == list(range(23))
    assert progress[-1][0] == progress[-1][1]
    # after the key-frame pass (23 pulled), the window pass holds at most one window ahead of the output
    assert max(h for h in held[1:]) <= 23 + 6


def test_windows_align_to_key_frames():
    """With a model whose windows disagree only in scale, aligned windows agree with the key frames."""

    class ScaledModel:
        calls = 0

        def __call__(self, clip, position_ids, num_inference_steps, generator, initial_noise="zero", **_):
            ScaledModel.calls += 1
            scale = 0.3 + 0.1 * ScaledModel.calls  # every call: a different scale and shift
            base = np.asarray(position_ids, float)[:, None, None] / 40 + np.zeros((1, 4, 4))
            return type("O", (), {"disparity": (scale * base + 0.05 * ScaledModel.calls).astype(np.float32)})

    out = dict(stream_depth(ScaledModel(), lambda: iter(np.zeros((30, 4, 4, 3), np.uint8)), 30, window=8, overlap=3))
    truth = np.arange(30)[:, None, None] / 40 + np.zeros((1, 4, 4))
    keys = WindowPlan(30, 8, 3).key_frames
    s, t = np.polyfit(truth[keys].ravel(), np.stack([out[k] for k in keys]).ravel(), 1)
    assert np.allclose(np.stack([out[i] for i in range(30)]), s * truth + t, atol=1e-6)


def test_stop_and_short_source():
    pipe = tiny_pipeline()
    video = tiny_video(12)
    stopped = CancelToken()
    stopped.cancel()
    with pytest.raises(Cancelled):
        list(stream_depth(pipe, lambda: iter(video), 12, window=6, overlap=2, num_inference_steps=1,
                          cancel=stopped))
    with pytest.raises(InputError, match="ended"):
        list(stream_depth(pipe, lambda: iter(video[:9]), 12, window=6, overlap=2, num_inference_steps=1))


@pytest.mark.parametrize("frames", [6, 12])  # one window, or key frames then windows
def test_stop_acts_inside_a_unet_call(frames):
    """A window of 32 frames takes seconds per denoising step on a CPU: Stop must not wait for the step."""
    pipe = tiny_pipeline()
    entered, finished, token = [], [], CancelToken()
    pipe.unet.down_blocks[0].resnets[0].register_forward_hook(lambda *_: (entered.append(1), token.cancel()))
    pipe.unet.register_forward_hook(lambda *_: finished.append(1))
    with pytest.raises(Cancelled):
        list(stream_depth(pipe, lambda: iter(tiny_video(frames)), frames, window=6, overlap=2, num_inference_steps=3,
                          cancel=token))
    assert len(entered) == 1 and not finished  # the first UNet call ended after its first resnet
    assert not any(m._forward_pre_hooks for m in pipe.unet.modules())  # and the stop hooks are gone
