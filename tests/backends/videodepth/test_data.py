"""Synthetic clips: exact depth agrees with the camera poses; windows mix durations and strides."""

import numpy as np

from backends.videodepth.data import disparity_target, render_clip, sample_windows
from backends.videodepth.metrics import tae


def test_clip_depth_is_consistent_with_its_poses_and_deterministic():
    clip = render_clip(7, n_frames=6, size=32)
    assert clip.rgb.shape == (6, 32, 32, 3) and clip.depth.shape == (6, 32, 32) and clip.extrinsics.shape == (6, 4, 4)
    assert np.array_equal(clip.rgb, render_clip(7, n_frames=6, size=32).rgb)
    valid = np.isfinite(clip.depth) & clip.static
    # true depth reprojected with true poses agrees with itself (up to pixel rounding on slanted surfaces)
    assert tae(clip.depth, valid, clip.intrinsics, clip.extrinsics) < 0.05
    # a flickering depth does not
    flicker = clip.depth * np.where(np.arange(6) % 2, 1.3, 1.0)[:, None, None]
    assert tae(flicker, valid, clip.intrinsics, clip.extrinsics) > 0.15


def test_disparity_target_is_normalised_per_clip():
    depth = np.array([[[[1.0, 2.0], [4.0, np.inf]]], [[[2.0, 2.0], [2.0, 2.0]]]])  # 2 clips × 1 frame
    t = disparity_target(depth)
    assert t[0, 0, 0, 0] == 1.0 and t[0, 0, 1, 1] == -1.0  # nearest → 1, nothing hit → −1
    assert np.isclose(t[0, 0, 1, 0], 2 * 0.25 / 1.0 - 1)
    assert np.all(t[1] == -1.0)  # a flat clip has no range


def test_windows_mix_strides_and_keep_true_indices():
    rng = np.random.default_rng(0)
    clips = {"rgb": rng.integers(0, 255, (3, 12, 8, 8, 3), dtype=np.uint8),
             "depth": rng.uniform(1, 3, (3, 12, 8, 8)).astype(np.float16)}
    strides = set()
    for _ in range(20):
        rgb, disp, idx = sample_windows(clips, rng, 4, 2)
        assert rgb.shape == (2, 4, 8, 8, 3) and disp.shape == (2, 4, 8, 8)
        assert disp.min() >= -1 and disp.max() <= 1 and idx.max() < 12
        strides |= set(np.diff(idx, axis=1).ravel().tolist())
    assert strides == {1, 2, 3}
    rgb, _, idx = sample_windows(clips, rng, 12, 1)
    assert idx.tolist() == [list(range(12))]  # a whole clip can only be taken at stride 1
