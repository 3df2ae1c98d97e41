"""The cached box depth equals the full render's, and a moved box re-casts only itself."""

import numpy as np

from backends.layout3d.layout import Layout, box_on_floor
from backends.synth import boxdepth, render

SCENE = "a green lawn under a pale blue sky"
BOXES = (box_on_floor("a red cube", -0.6, 1.0, (0.7, 0.7, 0.7), 20),
         box_on_floor("a blue sphere", 0.5, 1.3, (0.6, 0.9, 1.2), 45),
         box_on_floor("a pink torus", 0.1, 0.2, (0.5, 0.5, 0.3), 0))  # near the camera: overlaps the others


def test_equals_the_full_render_at_every_size():
    for size in (64, 200):
        layout = Layout(SCENE, BOXES).with_size(size)
        full = render(layout._scene, as_boxes=True, shadows=False)
        assert np.array_equal(layout.metric_depth(), full.depth)
        assert np.array_equal(layout.depth(), full.near_bright_depth())


def test_moving_one_box_casts_only_that_box():
    layout = Layout(SCENE, BOXES).with_size(96)
    layout.depth()
    before = boxdepth.box_patch.cache_info()
    moved = Layout(SCENE, (BOXES[0], box_on_floor("a blue sphere", 0.2, 1.3, (0.6, 0.9, 1.2), 45), BOXES[2]),
                   layout.camera)
    depth = moved.depth()
    after = boxdepth.box_patch.cache_info()
    assert after.misses - before.misses == 1 and after.hits - before.hits == 2
    full = render(moved._scene, as_boxes=True, shadows=False).near_bright_depth()
    assert np.array_equal(depth, full) and not np.array_equal(depth, layout.depth())
