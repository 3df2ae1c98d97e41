"""Hand-checked values of the re-implemented Depth Any Video metrics."""

import numpy as np
import pytest

from backends.videodepth.metrics import absrel, align_disparity, delta1, fit_scale_shift, tae


def test_scale_shift_fit_is_exact_on_an_affine_pair():
    pred = np.array([1.0, 2.0, 3.0])
    s, t = fit_scale_shift(pred, 2 * pred + 1, np.ones(3, bool))
    assert (s, t) == pytest.approx((2.0, 1.0))


def test_absrel_and_delta1_by_hand():
    gt = np.array([1.0, 2.0])
    valid = np.ones(2, bool)
    assert absrel(np.array([1.1, 2.0]), gt, valid) == pytest.approx(0.05)
    assert delta1(np.array([1.3, 2.0]), gt, valid) == 0.5  # 1.3 > 1.25, 2/2 = 1 < 1.25
    assert delta1(np.array([1.2, 1.7]), gt, valid) == 1.0


def test_alignment_recovers_depth_from_affine_disparity_and_ignores_sky():
    rng = np.random.default_rng(0)
    depth = rng.uniform(1, 5, (3, 8, 8))
    depth[0, 0, 0] = np.inf  # nothing hit: not valid
    pred = 0.3 / depth + 0.1  # disparity up to an unknown scale and shift
    aligned, valid = align_disparity(pred, depth)
    assert not valid[0, 0, 0] and valid.sum() == depth.size - 1
    assert absrel(aligned, depth, valid) < 1e-9 and delta1(aligned, depth, valid) == 1.0


def test_per_frame_alignment_forgives_flicker_that_per_video_does_not():
    depth = np.random.default_rng(1).uniform(1, 5, (2, 8, 8))
    pred = 1 / depth
    pred[1] *= 2.0  # the second frame's scale jumps
    per_video, valid = align_disparity(pred, depth)
    per_frame, _ = align_disparity(pred, depth, per_frame=True)
    assert absrel(per_frame, depth, valid) < 1e-9
    assert absrel(per_video, depth, valid) > 0.1


def plane_clip(z0=2.0, move=0.5, size=16, focal=16.0):
    k = np.array([[focal, 0, size / 2], [0, focal, size / 2], [0, 0, 1]])
    e0, e1 = np.eye(4), np.eye(4)
    e1[2, 3] = -move  # the camera moves `move` forward: world z → camera z − move
    depth = np.stack([np.full((size, size), z0), np.full((size, size), z0 - move)])
    return depth, k, np.stack([e0, e1])


def test_tae_is_zero_for_consistent_depth_and_hand_checked_for_an_error():
    depth, k, ext = plane_clip()
    valid = np.ones(depth.shape, bool)
    assert tae(depth, valid, k, ext) == pytest.approx(0.0, abs=1e-12)
    wrong = depth.copy()
    wrong[1] = 1.65  # 10% too far in the second frame
    # forward: the plane at 2.0 lands at 1.5, compared with 1.65 → 0.15/1.65; backward: 1.65 + 0.5 = 2.15 vs 2.0 → 0.15/2
    expected = 0.5 * (0.15 / 1.65 + 0.15 / 2.0)
    assert tae(wrong, valid, k, ext) == pytest.approx(expected, rel=1e-9)


def test_shape_mismatch_is_an_error():
    with pytest.raises(ValueError, match="shape"):
        align_disparity(np.zeros((2, 4, 4)), np.ones((2, 4, 5)))
