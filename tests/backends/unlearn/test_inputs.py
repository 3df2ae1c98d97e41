"""Bad input is refused with a clear message: a class forgotten onto itself, an unknown class, a checkpoint of
another teacher, a folder that holds no generator."""

import pytest

from backends.common.errors import InputError
from backends.unlearn.classes import check_pair
from backends.unlearn.loading import fingerprint, load_generator
from backends.unlearn.requests import DistilRequest, EvaluateRequest


def test_forgetting_a_class_onto_itself_is_refused(tmp_path):
    with pytest.raises(InputError, match="onto itself"):
        DistilRequest(out_dir=tmp_path, forget="cone", safe="cone").validate()
    with pytest.raises(InputError, match="onto itself"):
        EvaluateRequest(forget="cube", safe="cube").validate()
    assert check_pair("cube", "sphere") == (0, 1)


def test_an_unknown_class_names_the_known_ones():
    with pytest.raises(InputError, match="cube, sphere, cylinder, cone, torus"):
        check_pair("pyramid", "cube")


def test_a_checkpoint_of_another_teacher_is_refused(tiny_teacher, tmp_path):
    from backends.unlearn.networks import LabelUNet

    net, folder, fp = tiny_teacher
    other = LabelUNet(channels=(8, 16, 16))
    other.save(tmp_path / "other-teacher")
    other.save(tmp_path / "gen", {"method": "sfd", "teacher": fingerprint(tmp_path / "other-teacher"),
                                  "forget": "cube", "safe": "sphere"})
    with pytest.raises(InputError, match="another teacher"):
        load_generator(tmp_path / "gen", fp)
    net.save(tmp_path / "mine", {"method": "sfd", "teacher": fp, "forget": "cube", "safe": "sphere"})
    loaded, cfg = load_generator(tmp_path / "mine", fp)
    assert cfg["forget"] == "cube" and sum(p.numel() for p in loaded.parameters()) == sum(p.numel() for p in net.parameters())
    with pytest.raises(InputError, match="not a generator folder"):
        load_generator(tmp_path, fp)
