"""SMPL-X cannot be shipped: its loader is tested on a tiny file of the same layout (a stick figure whose
vertices are its joints), in SMPL-X's own frame (y up, facing +z)."""

import numpy as np
import pytest
import torch

from backends.avatar import smplx
from backends.avatar.body import skin
from backends.avatar.pose import PRESETS, Pose
from backends.common.errors import InputError, ModelMissingError

JOINTS_Y_UP = {
    "pelvis": (0, 0, 0), "left_hip": (0.06, -0.09, 0), "right_hip": (-0.06, -0.09, 0), "spine1": (0, 0.1, 0),
    "left_knee": (0.1, -0.5, 0), "right_knee": (-0.1, -0.5, 0), "spine2": (0, 0.25, 0),
    "left_ankle": (0.1, -0.9, 0), "right_ankle": (-0.1, -0.9, 0), "spine3": (0, 0.3, 0),
    "left_foot": (0.1, -0.95, 0.1), "right_foot": (-0.1, -0.95, 0.1), "neck": (0, 0.5, 0),
    "left_collar": (0.07, 0.42, 0), "right_collar": (-0.07, 0.42, 0), "head": (0, 0.65, 0),
    "left_shoulder": (0.17, 0.43, 0), "right_shoulder": (-0.17, 0.43, 0), "left_elbow": (0.43, 0.43, 0),
    "right_elbow": (-0.43, 0.43, 0), "left_wrist": (0.68, 0.43, 0), "right_wrist": (-0.68, 0.43, 0),
}
PARENTS = [-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 15, 15, 15] \
    + [20] * 15 + [21] * 15


def write_tiny_smplx(path):
    j = len(PARENTS)
    pos = np.array(list(JOINTS_Y_UP.values()) + [(0, 0.65, 0.05)] * 3
                   + [(0.75, 0.43, 0)] * 15 + [(-0.75, 0.43, 0)] * 15)
    kintree = np.stack([np.array(PARENTS, np.int64) % 2 ** 32, np.arange(j)]).astype(np.uint32)
    rng = np.random.default_rng(0)
    np.savez(path, v_template=pos, f=np.array([[0, 1, 2], [0, 3, 1]], np.uint32), weights=np.eye(j),
             kintree_table=kintree, J_regressor=np.eye(j), shapedirs=rng.normal(0, 0.01, (j, 3, 10)))
    return path


def test_tiny_smplx_loads_into_the_suite_frame_and_takes_the_sliders(tmp_path):
    model = smplx.read_smplx(write_tiny_smplx(tmp_path / "SMPLX_NEUTRAL.npz"))
    names = model.joint_names
    rest = smplx.smplx_rest(model)
    j = rest.joints.numpy()
    assert j[names.index("head"), 2] > 0.6 and j[names.index("left_wrist"), 0] > 0.6  # z up, left at +x
    assert j[names.index("left_foot"), 1] < -0.05  # toes forward: -y
    def at(pose, name):
        t = smplx.smplx_transforms(model, rest, pose)
        return skin(rest.vertices, torch.from_numpy(model.weights), t)[names.index(name)].numpy()
    shoulder = at(PRESETS["T-pose"], "left_shoulder")
    assert at(PRESETS["T-pose"], "left_wrist") == pytest.approx(j[names.index("left_wrist")], abs=1e-9)
    down = at(Pose(arm_raise_l=45, elbow_l=0), "left_wrist") - shoulder
    assert down[2] == pytest.approx(-0.51 * np.sin(np.radians(45)), abs=1e-6)
    assert at(PRESETS["arms up"], "right_wrist")[2] > at(PRESETS["arms up"], "head")[2]
    knee, ankle = at(Pose(knee_r=90), "right_knee"), at(Pose(knee_r=90), "right_ankle")
    assert (ankle - knee)[1] == pytest.approx(0.4, abs=1e-6)  # the shin swings backward (+y)
    def posed(pose):
        return skin(rest.vertices, torch.from_numpy(model.weights), smplx.smplx_transforms(model, rest, pose)).numpy()
    turned, straight = posed(Pose(yaw=30)), posed(Pose())
    assert np.allclose(turned[:, 2], straight[:, 2]) and not np.allclose(turned, straight)  # yaw keeps heights
    shaped = smplx.smplx_rest(model, np.ones(10))
    assert not torch.allclose(shaped.vertices, rest.vertices)


def test_missing_or_broken_smplx_files(tmp_path):
    from backends.common.settings import Settings

    with pytest.raises(ModelMissingError, match="smpl-x.is.tue.mpg.de"):
        smplx.load_smplx(Settings(models_dir=tmp_path))
    (tmp_path / "smplx").mkdir()
    np.savez(tmp_path / "smplx" / "SMPLX_NEUTRAL.npz", v_template=np.zeros((3, 3)))
    with pytest.raises(InputError, match="lacks the SMPL-X arrays"):
        smplx.load_smplx(Settings(models_dir=tmp_path))
    write_tiny_smplx(tmp_path / "smplx" / "SMPLX_NEUTRAL.npz")
    assert len(smplx.load_smplx(Settings(models_dir=tmp_path)).parents) == len(PARENTS)
    with pytest.raises(InputError, match="shape parameters"):
        smplx.smplx_rest(smplx.load_smplx(Settings(models_dir=tmp_path)), np.zeros(11))
