"""A scene built stage by stage (tiny random model): planning, preservation, move, go back."""

import numpy as np
import pytest

from backends.common.errors import InputError
from backends.layout3d.layout import Layout, box_on_floor
from backends.layout3d.stages import SceneSession, StageSettings

from .conftest import tiny_pipeline

SCENE = "a green lawn under a pale blue sky"
A = box_on_floor("a red cube", -0.7, 1.0, (0.6, 0.6, 0.6))
B = box_on_floor("a blue sphere", 0.7, 1.3, (0.6, 0.6, 0.6))


@pytest.fixture(scope="module")
def session():
    s = SceneSession(tiny_pipeline(), StageSettings(num_inference_steps=4, guidance_scale=2.0), 32)
    list(s.edit(Layout(SCENE, (A, B))))
    return s


def test_generate_makes_the_empty_scene_then_one_stage_per_box(session):
    assert [st.kind for st in session.stages] == ["empty", "insert", "insert"]
    assert session.stages[2].created == {0: 1, 1: 2}


def test_plan_has_one_change_per_stage(session):
    moved = box_on_floor("a red cube", -0.4, 0.8, (0.7, 0.7, 0.7))
    plan = session.plan(Layout(SCENE, (moved.__class__("a green cone", moved.center, moved.size, 0.0),)))
    assert [k for k, _, _ in plan] == ["change", "move", "remove"]
    with pytest.raises(InputError, match="Nothing changed"):
        list(session.edit(session.last.layout))
    with pytest.raises(InputError, match="scene prompt changed"):
        session.plan(Layout("a dark studio with a black floor", (A, B)))


def test_move_keeps_the_other_object_and_go_back(session):
    before = session.last
    moved = box_on_floor("a red cube", -0.3, 0.7, (0.6, 0.6, 0.6))
    new = list(session.edit(Layout(SCENE, (moved, B))))[-1]
    assert [st.kind for st in new] == ["move"]
    stage = new[0]
    assert stage.object_mask is not None and stage.object_mask.any()
    # the other object's box, away from both positions of the moved one, keeps its latents for the blended steps
    other = Layout(SCENE, (A, B), before.layout.camera).box_mask(1)
    assert other.any()
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
    out = list(session.edit(Layout(SCENE, (A.__class__("a green cone", A.center, A.size, A.yaw_deg),))))[-1]
    assert [st.kind for st in out] == ["change", "remove"]
    assert out[-1].image.shape == (32, 32, 3) and np.isfinite(out[-1].image).all()
    session.go_back(2)
