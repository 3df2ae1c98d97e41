"""Paste-back after an insert stage: earlier objects stay where the new object does not cover them."""

import numpy as np

from backends.common.imagemetrics import psnr
from backends.layout3d.layout import Layout, box_on_floor
from backends.layout3d.occlusion import (
    dilate,
    hidden_part,
    kept_from_before,
    occluders,
    paste_back,
    visible_mask,
    without,
)
from backends.synth.scene import ROOMS

NEAR = box_on_floor("a red cube", 0.0, 0.6, (0.7, 0.7, 0.7), 0.0)
FAR = box_on_floor("a blue cube", 0.1, 2.0, (1.0, 1.0, 1.0), 0.0)


def _disc(mask: np.ndarray, frac: float = 0.45) -> np.ndarray:
    """A round object inside a box's mask (it leaves the box's corners open, as a sphere does)."""
    ys, xs = np.nonzero(mask)
    cy, cx = ys.mean(), xs.mean()
    r = frac * min(np.ptp(ys), np.ptp(xs))
    yy, xx = np.mgrid[: mask.shape[0], : mask.shape[1]]
    return mask & ((yy - cy) ** 2 + (xx - cx) ** 2 <= r * r)


def _scene(first, second):
    """Empty room, the stage with ``first``'s object (a disc of its box), and the next stage's raw image:
    ``second``'s object drawn over its whole box's disc, the background under the rest of that box repainted
    as the empty room (erasing ``first``'s object there) and the floor darkened further down (a shadow)."""
    layout = Layout(ROOMS[0].prompt, (first, second))
    empty = np.full((64, 64, 3), 120, np.uint8)
    before = empty.copy()
    obj0 = _disc(layout.box_mask(0))
    before[obj0] = (230, 30, 30)
    image = before.copy()
    image[layout.box_mask(1)] = empty[layout.box_mask(1)]
    obj1 = _disc(layout.box_mask(1))
    image[obj1] = (30, 30, 230)
    shadow = np.zeros((64, 64), bool)
    shadow[56:, :] = True  # below both boxes
    image[shadow] = 60
    return layout, empty, before, image, obj0, obj1, shadow


def test_hidden_part_is_what_the_visible_mask_leaves_out():
    layout = Layout(ROOMS[0].prompt, (NEAR, FAR))
    hidden = hidden_part(layout, 1)
    assert hidden.sum() > 100 and not (hidden & visible_mask(layout, 1)).any()
    assert ((hidden | visible_mask(layout, 1)) == layout.box_mask(1)).all()
    assert not hidden_part(layout, 0).any()  # nothing stands in front of the near box


def test_occluders_are_the_boxes_in_front_of_some_of_a_box():
    side = box_on_floor("a green cone", -1.1, 0.9, (0.4, 0.4, 0.6), 0.0)  # to the left, overlapping neither
    layout = Layout(ROOMS[0].prompt, (NEAR, side, FAR))
    assert occluders(layout, 2) == (0,)  # the near cube hides some of the far one; the cone none of it
    assert occluders(layout, 0) == () and occluders(layout, 1) == ()
    amodal = without(layout, occluders(layout, 2))
    assert amodal.boxes == (side, FAR)
    far_alone = Layout(ROOMS[0].prompt, (FAR,)).depth()
    m = layout.box_mask(2)
    assert np.allclose(amodal.depth()[m], far_alone[m])  # the far box's whole face, as if the near one were not there
    assert not np.allclose(layout.depth()[m], far_alone[m])


def test_a_box_inserted_behind_keeps_the_object_in_front_and_its_own_object_shows_around_it():
    layout, empty, before, image, obj0, obj1, shadow = _scene(NEAR, FAR)
    out = paste_back(layout, 1, image, before, empty)
    assert (out[obj0] == before[obj0]).all()  # the near object is in front: kept whole
    shows = obj1 & ~obj0
    assert shows.sum() > 20 and (out[shows] == image[shows]).all()  # the far object where nothing hides it
    assert (out[shadow] == image[shadow]).all()  # the background stays as the stage drew it


def test_a_box_inserted_in_front_covers_the_object_behind_only_with_its_own_object():
    layout, empty, before, image, obj0, obj1, shadow = _scene(FAR, NEAR)
    covered = obj0 & obj1
    open_corner = obj0 & layout.box_mask(1) & ~obj1
    assert covered.sum() > 20 and open_corner.sum() > 5
    out = paste_back(layout, 1, image, before, empty)
    assert (out[obj1] == image[obj1]).all()  # the new object is in front
    ring = open_corner & ~dilate(obj1, 1)  # a pixel's margin around the new object is its own
    assert ring.any() and (out[ring] == before[ring]).all()  # the far object still shows beside it
    assert psnr(before, out, obj0 & ~layout.box_mask(1)) >= 100  # identical
    assert (out[shadow] == image[shadow]).all()


def test_the_first_insert_keeps_its_whole_image():
    layout = Layout(ROOMS[0].prompt, (NEAR,))
    empty = np.full((64, 64, 3), 120, np.uint8)
    image = empty.copy()
    image[:, :32] = 10
    assert not kept_from_before(layout, 0, image, empty, empty).any()


def test_a_removal_pastes_back_the_other_objects_but_not_the_removed_ones_old_place():
    layout, empty, before, image, obj0, obj1, _ = _scene(NEAR, FAR)
    before[obj1 & ~obj0] = (30, 30, 230)  # both objects stand in the picture before the removal
    freed = dilate(layout.box_mask(1), 2)  # box 2's object is taken out
    after = Layout(layout.scene_prompt, layout.boxes[:1], layout.camera)
    keep = kept_from_before(after, None, image, before, empty, freed)
    assert keep[obj0 & ~freed].all() and obj0[~freed].sum() > 20  # the near object is kept exactly
    assert not keep[freed].any()  # where the far one stood, the stage's own pixels
