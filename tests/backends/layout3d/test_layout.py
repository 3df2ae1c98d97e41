"""Layout parsing/validation and the box → depth geometry."""

import json

import numpy as np
import pytest

from backends.common.errors import InputError
from backends.layout3d.layout import MAX_BOXES, Layout, box_on_floor
from backends.synth import Camera

GOOD = {"scene_prompt": "a green lawn under a pale blue sky",
        "boxes": [{"prompt": "a red cube", "center": [0, 1, 0.35], "size": [0.7, 0.7, 0.7], "yaw_deg": 0}]}


def test_round_trip():
    layout = Layout.from_json(json.dumps(GOOD))
    assert Layout.from_json(layout.to_json()) == layout


@pytest.mark.parametrize("text, words", [
    ("{not json", "not valid JSON"),
    ("[" * 100_000 + "]" * 100_000, "not valid JSON"),  # nested too deep for the parser
    ("[1, 2]", "JSON object"),
    (json.dumps({"boxes": []}), "scene_prompt"),
    (json.dumps({**GOOD, "boxes": GOOD["boxes"] * (MAX_BOXES + 1)}), f"At most {MAX_BOXES}"),
    (json.dumps({**GOOD, "boxes": [{**GOOD["boxes"][0], "size": [0, 0.7, 0.7]}]}), "between"),
    (json.dumps({**GOOD, "boxes": [{**GOOD["boxes"][0], "center": [5.0, 1, 0.35]}]}), "outside the room"),
    (json.dumps({**GOOD, "boxes": [{**GOOD["boxes"][0], "center": [0, 1, -1]}]}), "floor"),
    (json.dumps({**GOOD, "boxes": [{**GOOD["boxes"][0], "center": [0, "a", 1]}]}), "three numbers"),
    (json.dumps({**GOOD, "boxes": [{**GOOD["boxes"][0], "prompt": ""}]}), "needs a prompt"),
    (json.dumps({**GOOD, "boxes": [{**GOOD["boxes"][0], "size": [1, 1, float("nan")]}]}), "finite"),
])
def test_bad_layouts_have_clear_messages(text, words):
    with pytest.raises(InputError, match=words):
        Layout.from_json(text)


def test_box_depth_matches_analytic_front_face():
    """Camera on the y axis looking straight ahead: the box's front face is at z-depth y_front − y_cam."""
    cam = Camera(64, 64, fov_deg=50.0, position=(0.0, -3.0, 0.5), look_at=(0.0, 1.0, 0.5))
    box = box_on_floor("a red cube", 0.0, 1.0, (0.8, 0.6, 1.0))
    layout = Layout("a green lawn under a pale blue sky", (box,), cam)
    depth = layout.metric_depth()
    assert depth[32, 32] == pytest.approx((1.0 - 0.3) - (-3.0), abs=1e-3)
    mask, points = layout.box_render(0)
    ys, xs = np.nonzero(mask)
    # the front face spans x ∈ [-0.4, 0.4] at depth 3.7 → ±f·0.4/3.7 pixels around the centre
    half = cam.focal * 0.4 / 3.7
    assert xs.min() == pytest.approx(32 - half, abs=1.0)
    assert xs.max() + 1 == pytest.approx(32 + half, abs=1.0)
    off = 0.5 / cam.focal * 3.7  # pixel (32, 32) looks through its centre (32.5, 32.5)
    assert np.allclose(points[32, 32], (off, 0.7, 0.5 - off), atol=2e-3)
    near = layout.depth()  # near-bright: the box front is brighter than the wall behind it
    assert near[32, 32] > near[5, 32]


def test_preview_depth_is_cheap_8bit():
    from backends.layout3d.service import preview_depth

    d = preview_depth(Layout.from_json(GOOD), 128)
    assert d.shape == (128, 128) and d.dtype == np.uint8 and d.max() > 200
