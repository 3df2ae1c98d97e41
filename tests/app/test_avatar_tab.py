"""The Avatar tab's slider table (kept torch-free so building the app stays light) matches the backend's."""

from dataclasses import fields


def test_sliders_match_the_pose_model():
    from app.tabs import avatar
    from backends.avatar.pose import PRESETS, SLIDER_RANGES, Pose

    assert list(avatar.SLIDERS) == [f.name for f in fields(Pose)] == list(SLIDER_RANGES)
    assert {k: tuple(map(float, v)) for k, v in avatar.RANGES.items()} == SLIDER_RANGES
    assert avatar.NEUTRAL == Pose().as_dict()
    assert avatar.PRESET_NAMES == list(PRESETS)
