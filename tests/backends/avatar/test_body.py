import subprocess
import sys

import numpy as np
import pytest
import torch

from backends.avatar import body
from backends.avatar.pose import PRESETS, Pose, pose_transforms, preset
from backends.common.errors import InputError


def _heads(rest, transforms):
    h = rest.bone_heads
    return (transforms[:, :3, :3] @ h[..., None])[..., 0] + transforms[:, :3, 3]


def test_rest_pose_is_identity_and_skinning_reproduces_rest():
    rest = body.rest_body()
    t = body.bone_transforms(rest)
    assert torch.equal(t, torch.eye(4, dtype=t.dtype).expand_as(t))
    coarse = body.coarse_template()
    v = coarse.vertices(rest.vertices)
    assert torch.allclose(body.skin(v, coarse.lbs_weights(), t), v)


def test_coarse_template_is_a_closed_coarse_mesh_of_blends():
    coarse = body.coarse_template()
    assert 1000 <= len(coarse.faces) <= 2000
    assert coarse.faces.max() < coarse.n_vertices
    assert np.allclose(coarse.weights.sum(1), 1) and (coarse.weights >= 0).all()
    edges = np.sort(np.concatenate([coarse.faces[:, [0, 1]], coarse.faces[:, [1, 2]], coarse.faces[:, [2, 0]]]), 1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert (counts == 2).all()  # every edge shared by exactly two faces: closed and manifold
    w = coarse.lbs_weights()
    assert w.shape == (coarse.n_vertices, len(body.bone_labels()))
    assert torch.allclose(w.sum(1), torch.ones(coarse.n_vertices, dtype=w.dtype))


def test_coarse_vertices_follow_a_new_phenotype():
    coarse = body.coarse_template()
    tall = body.rest_body(body.Phenotype(height=0.95))
    short = body.rest_body(body.Phenotype(height=0.05))
    def height(rest):
        v = coarse.vertices(rest.vertices)
        return (v[:, 2].max() - v[:, 2].min()).item()
    assert height(tall) > height(short) + 0.15


def test_coarse_lbs_matches_anny_full_mesh_skinning():
    rest = body.rest_body()
    coarse = body.coarse_template()
    t = pose_transforms(rest, preset("walking"))
    ours = body.skin(coarse.vertices(rest.vertices), coarse.lbs_weights(), t)
    anny_posed = coarse.vertices(torch.from_numpy(body.posed_full_mesh(rest, t)).double())
    err = (ours - anny_posed).norm(dim=-1)
    assert err.mean() < 1e-3 and err.max() < 0.01  # metres
    moved = (ours - coarse.vertices(rest.vertices)).norm(dim=-1)
    assert moved.max() > 0.2


def test_skin_is_linear_blend_of_bone_transforms():
    v = torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    w = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
    t = torch.eye(4).repeat(2, 1, 1)
    t[1, :3, 3] = torch.tensor([0.0, 0.0, 2.0])
    out = body.skin(v, w, t)
    assert torch.allclose(out, torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 1.0]]))


def test_presets_put_limbs_where_their_names_say():
    rest = body.rest_body()
    labels = body.bone_labels()
    def at(pose, bone):
        return _heads(rest, pose_transforms(rest, pose))[labels.index(bone)]
    for side in "LR":
        shoulder, wrist = at(PRESETS["T-pose"], f"upperarm01.{side}"), at(PRESETS["T-pose"], f"wrist.{side}")
        assert abs((wrist - shoulder)[2]) < 0.03 and abs((wrist - shoulder)[0]) > 0.4  # horizontal arm
        assert at(PRESETS["arms up"], f"wrist.{side}")[2] > at(PRESETS["arms up"], "head")[2]
    sit_knee, sit_hip = at(PRESETS["sitting"], "lowerleg01.L"), at(PRESETS["sitting"], "upperleg01.L")
    assert abs((sit_knee - sit_hip)[2]) < 0.08 and (sit_knee - sit_hip)[1] < -0.3  # thigh forward (-y)
    wave = at(PRESETS["waving"], "wrist.R")
    assert wave[2] > at(PRESETS["waving"], "upperarm01.R")[2]
    turned = at(Pose(yaw=90), "lowerleg01.L")  # left knee (+x) turns to face -y ... at +y after +90° about z
    assert turned[1] > 0.05


def test_pose_validation():
    with pytest.raises(InputError, match="elbow_l"):
        Pose(elbow_l=400)
    with pytest.raises(InputError, match="Unknown pose sliders"):
        Pose.from_dict({"tail": 3})
    with pytest.raises(InputError, match="preset"):
        preset("moonwalk")
    with pytest.raises(InputError, match="height"):
        body.Phenotype(height=1.5)
    p = Pose.random(np.random.default_rng(0))
    assert Pose.from_dict(p.as_dict()) == p


def test_loading_the_cached_body_needs_no_network(tmp_path):
    """In a fresh process with sockets disabled, the cached anny model and coarse template load."""
    models_dir = body.anny_cache_dir_loaded().parent.parent
    code = (
        "import socket\n"
        "def _no(*a, **k): raise RuntimeError('network touched')\n"
        "socket.socket.connect = _no; socket.create_connection = _no; socket.getaddrinfo = _no\n"
        "from backends.common.settings import Settings\n"
        "from backends.avatar import body\n"
        f"body.body_model(Settings(models_dir={str(models_dir)!r}))\n"
        "print(body.coarse_template().n_vertices)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.strip().splitlines()[-1]) == body.coarse_template().n_vertices
