"""The Avatar tab's pose sliders (kept torch-free so building the app stays light) are the backend's ``Pose``
fields, and its API handlers take them as named parameters."""

from dataclasses import fields

import pytest


def test_sliders_match_the_pose_model():
    from app.tabs import avatar
    from backends.avatar.pose import PRESETS, SLIDER_RANGES, Pose

    assert list(avatar.SLIDERS) == [f.name for f in fields(Pose)] == list(SLIDER_RANGES)
    assert avatar.PRESET_NAMES == list(PRESETS)


def test_pose_parameters_name_each_slider_and_check_the_pose():
    import inspect

    from app.tabs.avatar import SLIDERS, pose_parameters
    from backends.avatar.pose import Pose
    from backends.common.errors import InputError

    @pose_parameters
    def handler(first, pose, last):
        """A handler.

        Args:
            first: the first.
            last: the last.
        """
        return first, pose, last

    assert list(inspect.signature(handler).parameters) == ["first", *SLIDERS, "last"]
    values = dict(Pose().as_dict(), arm_raise_r=150)
    assert handler("a", *values.values(), "z") == ("a", Pose(arm_raise_r=150), "z")
    assert handler(first=1, last=2, **values)[1].arm_raise_r == 150
    doc = handler.__doc__
    assert "    last: the last." in doc and "    arm_raise_r: Right arm: 0 = down" in doc and "from 0 to 180" in doc
    with pytest.raises(InputError, match="pose slider 'knee_l' must be a number from 0 to 150 degrees"):
        handler("a", *dict(values, knee_l=200).values(), "z")

    @pose_parameters
    def optional(upload=None, pose=None):
        return upload, pose

    assert inspect.signature(optional).parameters["arm_raise_l"].default == 45.0  # the API may leave it out
    assert optional() == (None, Pose()) and optional(head_turn=30)[1] == Pose(head_turn=30)
