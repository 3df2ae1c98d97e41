import numpy as np
import pytest

from backends.avatar import data
from backends.avatar.pose import preset
from backends.common.errors import InputError


def test_view_of_a_subject_has_body_pixels_with_depth_and_texture():
    subject = data.Subject(outfit=data.Outfit(pattern="stripes", shirt=(1.0, 0.0, 0.0),
                                              shirt_pattern_colour=(0.0, 0.0, 1.0)))
    front, side = data.render_views(subject, preset("A-pose"), data.camera_ring(4, 96)[:2])
    for view in (front, side):
        assert view.rgb.shape == (96, 96, 3) and view.mask.shape == view.depth.shape == (96, 96)
        body = view.mask > 0
        assert 0.05 < body.mean() < 0.5
        assert (view.rgb[~body] == 0).all() and (view.depth[~body] == 0).all()
        assert 2.4 < view.depth[body].min() < view.depth[body].max() < 3.6  # camera ring radius 3 m
    # the striped shirt shows both of its colours (red and blue dominate different pixels)
    rgb = front.rgb[front.mask > 0]
    assert ((rgb[:, 0] > 2 * rgb[:, 2] + 0.1).sum() > 20) and ((rgb[:, 2] > 2 * rgb[:, 0] + 0.1).sum() > 20)
    # the front and the side silhouettes differ
    assert np.abs(front.mask - side.mask).mean() > 0.02


def test_outfit_covers_every_material_and_a_pose_changes_the_silhouette():
    outfit = data.Outfit(pattern="checks")
    rest = data.rest_body()
    mats = data.vertex_materials(rest, outfit)
    assert {data.SKIN, data.SHIRT, data.TROUSERS, data.SHOES, data.HAIR_M} <= set(np.unique(mats))
    cam = data.camera_ring(1, 64)[0]
    a = data.render_view(data.Subject(outfit=outfit), preset("A-pose"), cam, rest)
    b = data.render_view(data.Subject(outfit=outfit), preset("walking"), cam, rest)
    assert np.abs(a.mask - b.mask).sum() > 20  # the pose changed the silhouette


def test_sample_generator_and_bad_input():
    sample = data.sample_subject(seed=3, n_views=3, size=64)
    assert len(sample.views) == 3 and sample.ms_per_view > 0
    again = data.sample_subject(seed=3, n_views=3, size=64)
    assert np.array_equal(sample.views[0].rgb, again.views[0].rgb)  # seeded
    with pytest.raises(InputError):
        data.camera_ring(0)
    with pytest.raises(InputError):
        data.Outfit(pattern="paisley")
