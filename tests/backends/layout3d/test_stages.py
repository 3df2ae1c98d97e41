"""A scene built stage by stage (tiny random model): planning, preservation, move, go back."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken
from backends.layout3d.layout import Layout, box_on_floor
from backends.layout3d.stages import SceneSession, StageSettings

from .conftest import tiny_pipeline

SCENE = "a green lawn under a pale blue sky"
A = box_on_floor("a red cube", -0.7, 1.0, (0.6, 0.6, 0.6))
B = box_on_floor("a blue sphere", 0.7, 1.3, (0.6, 0.6, 0.6))


@pytest.fixture(scope="module")
def session():
    s = SceneSession(tiny_pipeline(), StageSettings(num_inference_steps=4, guidance_scale=2.0), 32)
    s.edit(Layout(SCENE, (A, B)))
    return s


def test_generate_makes_the_empty_scene_then_one_stage_per_box(session):
    assert [st.kind for st in session.stages] == ["empty", "insert", "insert"]
    assert session.stages[2].created == {0: 1, 1: 2}


def test_plan_has_one_change_per_stage(session):
    moved = box_on_floor("a red cube", -0.4, 0.8, (0.7, 0.7, 0.7))
    plan = session.plan(Layout(SCENE, (moved.__class__("a green cone", moved.center, moved.size, 0.0),)))
    assert [k for k, _, _ in plan] == ["remove", "change", "move"]  # what goes first, then what stays changes
    with pytest.raises(InputError, match="Nothing changed"):
        session.edit(session.last.layout)
    with pytest.raises(InputError, match="scene prompt changed"):
        session.plan(Layout("a dark studio with a black floor", (A, B)))


def test_move_keeps_the_other_object_and_go_back(session):
    before = session.last
    moved = box_on_floor("a red cube", -0.3, 0.7, (0.6, 0.6, 0.6))
    new = session.edit(Layout(SCENE, (moved, B)))
    assert [st.kind for st in new] == ["move"]
    stage = new[0]
    assert stage.object_mask is not None and stage.object_mask.any()
    # the other object keeps the previous stage's latents for the blended steps (3 of 4), wherever its box is
    # away from both places of the moved object
    lat = before.cache.latents[0].shape[-2:]

    def latent_region(mask, dilate=0):
        m = F.interpolate(torch.from_numpy(mask.astype(np.float32))[None, None], size=lat, mode="bilinear")
        return F.max_pool2d(m, 2 * dilate + 1, 1, dilate) > 0 if dilate else m > 0

    other = latent_region(before.layout.box_mask(1)) & ~latent_region(before.layout.box_mask(0), 2) \
        & ~latent_region(stage.box_mask, 1) & ~latent_region(stage.object_mask, 1)
    assert other.sum() >= 4
    for i in range(3):
        a, b = stage.cache.latents[i], before.cache.latents[i]
        assert torch.allclose(a[other.expand_as(a)], b[other.expand_as(b)], atol=1e-5), i
    # while the moved object's new place changed
    here = latent_region(stage.object_mask)
    assert not torch.allclose(stage.cache.final[here.expand_as(stage.cache.final)],
                              before.cache.final[here.expand_as(before.cache.final)], atol=1e-2)
    session.go_back(2)
    assert len(session.stages) == 3 and session.last is before
    with pytest.raises(InputError):
        session.go_back(9)


def test_settings_are_validated():
    with pytest.raises(InputError):
        StageSettings(method="magic").validate()
    with pytest.raises(InputError):
        StageSettings(num_inference_steps=0).validate()


def test_remove_and_change(session):
    before = session.last
    out = session.edit(Layout(SCENE, (A.__class__("a green cone", A.center, A.size, A.yaw_deg),)))
    assert [st.kind for st in out] == ["remove", "change"]
    remove, change = out
    assert remove.created == {0: 1} and change.created == {0: 4} and len(remove.layout.boxes) == 1
    # removing blends the scene-without-the-object everywhere for the blended steps
    for i in range(3):
        assert torch.allclose(remove.cache.latents[i], remove.source_latents[i], atol=1e-6)
    gone = before.layout.box_mask(1)
    assert np.abs(remove.image[gone].astype(int) - before.image[gone].astype(int)).mean() > 1.0
    session.go_back(2)


def test_deleting_a_box_that_is_not_the_last_removes_it_and_leaves_the_others_alone(session):
    """The editor's Delete takes box 1 out of the list, so box 2 becomes box 1: one removal, not a re-prompt and
    move of box 2 into box 1's place and a removal of the last box."""
    C = box_on_floor("a green cone", 0.0, 2.0, (0.5, 0.5, 0.5))
    assert [k for k, _, _ in session.plan(Layout(SCENE, (B,)))] == ["remove"]
    session.edit(Layout(SCENE, (A, B, C)))
    before = session.last
    plan = session.plan(Layout(SCENE, (A, C, box_on_floor("a pink torus", 1.0, 0.4, (0.4, 0.4, 0.4)))))
    assert [(k, j) for k, j, _ in plan] == [("remove", 1), ("insert", 2)]
    out = session.edit(Layout(SCENE, (A, C)))
    assert [st.kind for st in out] == ["remove"] and out[0].action == "remove box 2"
    assert out[0].layout.boxes == (A, C) and out[0].created == {0: before.created[0], 1: before.created[2]}
    session.go_back(2)


def test_steps_report_previews_and_stop_within_a_step():
    s = SceneSession(tiny_pipeline(), StageSettings(num_inference_steps=4, guidance_scale=2.0), 32)
    s.preview_every = 3  # x̂0 is decoded on steps 3 and 4 (the last), progress is reported every step
    events, token = [], CancelToken()

    def report(event):
        events.append(event)
        if len(events) == 6:  # the second step of the first insert
            token.cancel()

    with pytest.raises(Cancelled):
        s.edit(Layout(SCENE, (A, B)), report, token)
    assert len(events) == 6 and [st.kind for st in s.stages] == ["empty"]  # the finished stage is kept
    assert [e.preview is not None for e in events[:4]] == [False, False, True, True]
    assert events[2].preview.shape == (32, 32, 3) and events[2].preview.dtype == np.uint8
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and "step 2/4" in events[5].message
