"""Window stitching: where windows overlap, a long clip's depth equals what the short clips give."""

import numpy as np

from backends.videodepth.longvideo import WindowPlan, stream_depth


class PerFrameModel:
    """Depth from each frame alone (its mean brightness gradient), whatever clip it is in: every window
    agrees with every other on the frames they share, so stitching must not change a single value."""

    calls: list[tuple[int, ...]] = []

    def __call__(self, clip, position_ids, num_inference_steps, generator, initial_noise="zero", **_):
        PerFrameModel.calls.append(tuple(int(i) for i in position_ids))
        disp = np.asarray(clip, np.float32).mean(-1) / 255.0
        return type("Out", (), {"disparity": disp})


def test_long_clip_equals_the_short_clip_result_on_every_frame():
    rng = np.random.default_rng(0)
    video = rng.integers(0, 256, (37, 6, 5, 3), dtype=np.uint8)
    PerFrameModel.calls = []
    long = dict(stream_depth(PerFrameModel(), lambda: iter(video), 37, window=8, overlap=3, max_keys=32))
    calls = list(PerFrameModel.calls)
    short = PerFrameModel()(video, np.arange(37), 1, None).disparity
    assert sorted(long) == list(range(37))
    assert np.allclose(np.stack([long[i] for i in range(37)]), short, atol=1e-6)
    windows = WindowPlan(37, 8, 3).windows
    assert calls[1:] == [tuple(range(a, b)) for a, b in windows]  # true indices, window by window
    shared = [i for (a, b), (c, _) in zip(windows, windows[1:], strict=False) for i in range(c, b)]
    assert len(shared) >= 3 * (len(windows) - 1)  # the overlaps the cross-fade ran over
