import numpy as np
import pytest
import torch

from backends.avatar.export import (
    covariance_to_scale_rotation,
    matrix_to_quaternion,
    ply_bytes,
    quaternion_to_matrix,
    read_ply,
    splat_bytes,
    write_ply,
)
from backends.avatar.gom import FaceParams, Gaussians, gaussians_on_faces, so3_exp
from backends.common.errors import InputError


def random_gaussians(n=50, seed=0):
    gen = torch.Generator().manual_seed(seed)
    r = so3_exp(torch.randn(n, 3, generator=gen, dtype=torch.float64))
    s = torch.rand(n, 3, generator=gen, dtype=torch.float64) * 0.1 + 1e-3
    m = r * s[:, None, :]
    return Gaussians(torch.randn(n, 3, generator=gen, dtype=torch.float64), m @ m.transpose(1, 2),
                     torch.rand(n, 3, generator=gen, dtype=torch.float64),
                     torch.rand(n, generator=gen, dtype=torch.float64) * 0.9 + 0.05)


def test_ply_round_trip_keeps_every_gaussian(tmp_path):
    g = random_gaussians()
    path = write_ply(g, tmp_path / "avatar.ply")
    text = path.read_bytes()[:3000].decode("ascii", errors="ignore")
    assert text.startswith("ply\nformat binary_little_endian 1.0\nelement vertex 50\n")
    for prop in ("x", "f_dc_0", "f_dc_2", "opacity", "scale_0", "scale_2", "rot_0", "rot_3"):
        assert f"property float {prop}\n" in text
    back = read_ply(path)
    assert torch.allclose(back.means, g.means, atol=1e-6)
    assert torch.allclose(back.colors, g.colors, atol=1e-6)
    assert torch.allclose(back.opacities, g.opacities, atol=1e-6)
    assert torch.allclose(back.covars, g.covars, atol=1e-7, rtol=1e-4)


def test_ply_has_the_reference_trainers_field_order(tmp_path):
    """The Inria 3DGS trainer's ``save_ply`` order, all 48 SH coefficients included (viewers built on its
    loader read them by position); a file without normals and f_rest still reads."""
    raw = write_ply(random_gaussians(), tmp_path / "a.ply").read_bytes()
    header = raw[:raw.index(b"end_header")].decode("ascii").splitlines()
    props = [line.split()[2] for line in header if line.startswith("property")]
    assert props == (["x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2"]
                     + [f"f_rest_{i}" for i in range(45)] + ["opacity", "scale_0", "scale_1", "scale_2",
                                                             "rot_0", "rot_1", "rot_2", "rot_3"])
    assert len(raw) - raw.index(b"end_header\n") - len(b"end_header\n") == 50 * len(props) * 4
    g = random_gaussians()
    data = np.frombuffer(ply_bytes(g)[raw.index(b"end_header\n") + 11:], dtype=[(p, "<f4") for p in props])
    assert np.all(np.stack([data[f"f_rest_{i}"] for i in range(45)]) == 0)
    keep = [p for p in props if not p.startswith(("n", "f_rest"))]
    slim = ("ply\nformat binary_little_endian 1.0\nelement vertex 50\n"
            + "".join(f"property float {p}\n" for p in keep) + "end_header\n").encode() \
        + np.stack([data[p] for p in keep], 1).astype("<f4").tobytes()
    assert torch.allclose(read_ply(slim).means, g.means, atol=1e-6)


def test_thin_steiner_gaussians_survive_the_ply(tmp_path):
    tri = torch.tensor([[0.0, 0, 0], [0.02, 0, 0], [0.005, 0.015, 0.004]], dtype=torch.float64)
    g = gaussians_on_faces(tri, np.array([[0, 1, 2]]), FaceParams.initial(1, torch.float64))
    back = read_ply(write_ply(g, tmp_path / "one.ply"))
    assert torch.allclose(back.covars, g.covars, atol=1e-10, rtol=1e-4)
    assert back.opacities.item() == pytest.approx(1.0, abs=2e-4)  # opacity 1 is written as a finite logit


def test_scale_rotation_decomposition_and_quaternions():
    g = random_gaussians(20, seed=1)
    s, q = covariance_to_scale_rotation(g.covars.numpy())
    assert np.allclose(np.linalg.norm(q, axis=1), 1) and (q[:, 0] >= 0).all()
    r = quaternion_to_matrix(q)
    assert np.allclose(np.linalg.det(r), 1)
    assert np.allclose(r @ (s[:, :, None] ** 2 * np.swapaxes(r, 1, 2)), g.covars.numpy(), atol=1e-12)
    r90 = np.array([[[0.0, -1, 0], [1, 0, 0], [0, 0, 1]]])
    assert np.allclose(matrix_to_quaternion(r90), [[np.sqrt(0.5), 0, 0, np.sqrt(0.5)]])


def test_splat_file_layout():
    g = random_gaussians(10, seed=2)
    raw = splat_bytes(g)
    assert len(raw) == 32 * 10
    rec = np.frombuffer(raw, dtype=[("pos", "<f4", 3), ("scale", "<f4", 3), ("rgba", "u1", 4), ("rot", "u1", 4)])
    s, _ = covariance_to_scale_rotation(g.covars.numpy())
    order = np.argsort(-(s.prod(1) * g.opacities.numpy()), kind="stable")
    assert np.allclose(rec["pos"], g.means.numpy()[order], atol=1e-6)
    assert np.abs(rec["rgba"][:, :3] / 255 - g.colors.numpy()[order]).max() <= 0.5 / 255 + 1e-9
    q = (rec["rot"].astype(np.float64) - 128) / 128
    assert np.allclose(np.linalg.norm(q, axis=1), 1, atol=0.03)


def test_bad_files_and_inputs(tmp_path):
    with pytest.raises(InputError, match="not a PLY"):
        read_ply(b"hello")
    (tmp_path / "mesh.ply").write_bytes(b"ply\nformat binary_little_endian 1.0\nelement vertex 0\n"
                                        b"property float x\nend_header\n")
    with pytest.raises(InputError, match="3DGS layout"):
        read_ply(tmp_path / "mesh.ply")
    with pytest.raises(InputError, match="no Gaussians"):
        splat_bytes(Gaussians(torch.zeros(0, 3), torch.zeros(0, 3, 3), torch.zeros(0, 3), torch.zeros(0)))
