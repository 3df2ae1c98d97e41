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


# --- Add box: new boxes stand in free floor space ------------------------------------------------
def _apart(a, b, gap=0.0) -> bool:
    from backends.layout3d.layout import footprint

    (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = footprint(a), footprint(b)
    return ax1 + gap <= bx0 or bx1 + gap <= ax0 or ay1 + gap <= by0 or by1 + gap <= ay0


def _in_view(layout, box) -> bool:
    uvz = layout.camera.project(box.corners())
    return bool((uvz[:, 2] > 0).all() and (uvz[:, :2] >= 0).all() and (uvz[:, 0] <= layout.camera.width).all()
                and (uvz[:, 1] <= layout.camera.height).all())


def test_add_box_fills_the_room_without_overlapping_footprints():
    from backends.layout3d.layout import FREE_GAP, add_box

    layout = Layout("a green lawn under a pale blue sky")
    for i in range(MAX_BOXES):
        layout = add_box(layout, f"a red cube {i}")
        new = layout.boxes[-1]
        assert new.center[2] == pytest.approx(new.size[2] / 2)  # on the floor
        assert _in_view(layout, new), new
        assert all(_apart(new, old, FREE_GAP - 1e-6) for old in layout.boxes[:-1]), layout.boxes
    layout.validate()  # inside the room
    first = [layout.camera.project(b.corners())[:, :2] for b in layout.boxes[:3]]
    for i in range(3):  # the first three stand side by side: none hides another in the picture
        for j in range(i):
            a, b = first[i], first[j]
            assert a[:, 0].max() <= b[:, 0].min() or b[:, 0].max() <= a[:, 0].min(), (i, j, layout.boxes)
    with pytest.raises(InputError, match=f"At most {MAX_BOXES}"):
        add_box(layout, "one too many")


def test_add_box_avoids_turned_boxes_of_the_default_layout():
    """The tab's default layout (a turned cube and a sphere): the old fixed spots landed on them."""
    from app.tabs.layout3d import DEFAULT_LAYOUT
    from backends.layout3d.layout import add_box

    layout = Layout.from_json(DEFAULT_LAYOUT)
    for _ in range(3):
        layout = add_box(layout, "a green cone")
        assert all(_apart(layout.boxes[-1], old) for old in layout.boxes[:-1]), layout.boxes
    assert len(layout.boxes) == MAX_BOXES


def test_crowded_floor_gets_the_least_overlapping_spot_and_a_clear_prompt_is_needed():
    from backends.layout3d.layout import add_box, footprint, free_floor_spot

    big = tuple(box_on_floor("a blue cube", x, y, (1.9, 1.9, 0.5)) for x, y in ((-0.95, 0.6), (0.95, 0.6),
                                                                                  (-0.95, 2.45), (0.95, 2.45)))
    layout = Layout("a green lawn under a pale blue sky", big)
    x, y = free_floor_spot(layout)
    new = box_on_floor("a red cube", x, y, (0.7, 0.7, 0.7))
    nx0, ny0, nx1, ny1 = footprint(new)
    overlaps = [max(0, min(nx1, b[2]) - max(nx0, b[0])) * max(0, min(ny1, b[3]) - max(ny0, b[1]))
                for b in map(footprint, big)]
    assert max(overlaps) <= 0.7 * 0.7 / 2 + 1e-9  # it straddles a seam, never sits inside one box
    with pytest.raises(InputError, match="Type what goes in the new box"):
        add_box(layout, "  ")
