"""3D correspondences of a moved box → 2D shift and depth-aware scale, against the pinhole model."""

import numpy as np
import pytest

from backends.layout3d.layout import Layout, box_on_floor
from backends.layout3d.move import match_boxes, segment_object, warp_object
from backends.synth import Camera

CAM = Camera(128, 128, fov_deg=50.0, position=(0.0, -3.0, 0.5), look_at=(0.0, 1.0, 0.5))
SCENE = "a green lawn under a pale blue sky"


def _corr(old, new):
    lo, ln = Layout(SCENE, (old,), CAM), Layout(SCENE, (new,), CAM)
    om, op = lo.box_render(0)
    nm, npts = ln.box_render(0)
    return match_boxes(old, om, op, new, nm, npts)


def test_sideways_move_shifts_by_the_projected_distance_without_scaling():
    old = box_on_floor("a red cube", -0.4, 1.0, (0.6, 0.6, 0.6))
    new = box_on_floor("a red cube", 0.4, 1.0, (0.6, 0.6, 0.6))
    corr = _corr(old, new)
    sy, sx = corr.scale
    assert sx == pytest.approx(1.0, abs=0.06) and sy == pytest.approx(1.0, abs=0.06)
    dy, dx = corr.shift
    z_front = (1.0 - 0.3) + 3.0
    assert dx == pytest.approx(CAM.focal * 0.8 / z_front, abs=2.0)
    assert abs(dy) <= 1.0


def test_moving_closer_scales_by_the_depth_ratio():
    old = box_on_floor("a red cube", 0.0, 1.6, (0.6, 0.6, 0.6))
    new = box_on_floor("a red cube", 0.0, 0.6, (0.6, 0.6, 0.6))
    sy, sx = _corr(old, new).scale
    expect = ((1.6 - 0.3) + 3.0) / ((0.6 - 0.3) + 3.0)
    assert sx == pytest.approx(expect, rel=0.08)


def test_resizing_the_box_scales_the_object():
    old = box_on_floor("a red cube", 0.0, 1.0, (0.5, 0.5, 0.5))
    new = box_on_floor("a red cube", 0.0, 1.0, (1.0, 0.5, 0.5))
    sy, sx = _corr(old, new).scale
    assert sx == pytest.approx(2.0, rel=0.1) and sy == pytest.approx(1.0, abs=0.08)


def test_warp_pastes_the_object_where_the_box_went():
    old = box_on_floor("a red cube", -0.4, 1.0, (0.6, 0.6, 0.6))
    new = box_on_floor("a red cube", 0.4, 1.0, (0.6, 0.6, 0.6))
    lo = Layout(SCENE, (old,), CAM)
    image = np.full((128, 128, 3), 40, np.uint8)
    obj = lo.box_mask(0)
    image[obj] = (200, 10, 10)
    comp, warped = warp_object(image, obj, np.full_like(image, 40), _corr(old, new))
    new_mask = Layout(SCENE, (new,), CAM).box_mask(0)
    inter = (warped & new_mask).sum() / warped.sum()
    assert inter > 0.9
    assert (comp[warped] == (200, 10, 10)).all() and (comp[~warped] == 40).all()


def test_segment_uses_attention_inside_the_box_and_the_change():
    box = np.zeros((32, 32), bool)
    box[8:24, 8:24] = True
    attn = np.zeros((32, 32), np.float32)
    attn[10:20, 10:20] = 1.0
    attn[0:4, 0:4] = 1.0  # attention outside the box is ignored
    before = np.zeros((32, 32, 3), np.uint8)
    after = before.copy()
    after[11:19, 11:19] = 255
    seg = segment_object(attn, box, after, before)
    assert seg[12:18, 12:18].all() and not seg[0:4, 0:4].any() and seg.sum() <= 100
