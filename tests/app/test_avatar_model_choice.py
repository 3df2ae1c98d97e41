"""The Avatar tab offers the authors' LIFe-GoM checkpoint only when it and the user's SMPL-X file are in the
models folder (the registry's ``lifegom`` and ``smplx``), and says so in its model line."""

from app.tabs import avatar
from backends.common.settings import get_settings


def test_published_checkpoint_is_offered_only_when_it_and_smplx_are_present():
    from backends.avatar.lifegom_published import CHECKPOINT_FILE

    models = get_settings().models_dir  # this test's own empty models folder
    assert [v for _, v in avatar.model_choices()] == ["avatar-embedded"]
    assert avatar.default_model() == "avatar-embedded"
    assert "`lifegom` checkpoint: not present" in avatar.model_info()
    ckpt = models / "lifegom" / CHECKPOINT_FILE
    ckpt.parent.mkdir(parents=True)
    ckpt.write_bytes(b"x")
    assert [v for _, v in avatar.model_choices()] == ["avatar-embedded"]  # SMPL-X still missing
    (models / "smplx").mkdir()
    (models / "smplx" / "SMPLX_NEUTRAL.npz").write_bytes(b"x")
    assert [v for _, v in avatar.model_choices()] == ["avatar-embedded", "lifegom"]
    assert "`lifegom` checkpoint: present, so it is chosen by default" in avatar.model_info()
    assert avatar.default_model() == "lifegom"  # a real model present is the default (issue 26)
