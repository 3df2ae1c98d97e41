import math

import numpy as np
import pytest
import torch

from backends.avatar import body
from backends.avatar.gom import (
    NORMAL_SCALE,
    FaceParams,
    GoMAvatar,
    gaussians_on_faces,
    so3_exp,
    steiner_frame,
    subdivide,
)
from backends.avatar.pose import Pose, pose_transforms, rotation

TETRA = np.array([[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]])
TETRA_XYZ = torch.tensor([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=torch.float64)


def test_steiner_frame_of_an_equilateral_triangle_is_its_incircle():
    s = 0.3
    tri = torch.tensor([[0, 0, 0], [s, 0, 0], [s / 2, s * math.sqrt(3) / 2, 0]], dtype=torch.float64)
    t = steiner_frame(tri)
    r = s / (2 * math.sqrt(3))  # inradius: the Steiner inellipse of an equilateral triangle is its incircle
    cov = t @ t.T
    expected = torch.diag(torch.tensor([4 * r * r, 4 * r * r, NORMAL_SCALE ** 2], dtype=torch.float64))
    assert torch.allclose(cov, expected, atol=1e-12)


def test_steiner_frame_of_a_scalene_triangle_matches_the_analytic_inellipse():
    tri = torch.tensor([[0.1, -0.2, 0.3], [0.9, 0.1, 0.2], [0.3, 0.7, -0.1]], dtype=torch.float64)
    t = steiner_frame(tri)
    a0, a1, n = t[:, 0] / 2, t[:, 1] / 2, t[:, 2]
    a, b, c = (torch.linalg.norm(tri[i] - tri[j]).item() for i, j in ((1, 2), (2, 0), (0, 1)))
    z = math.sqrt(a ** 4 + b ** 4 + c ** 4 - a * a * b * b - b * b * c * c - c * c * a * a)
    semi = sorted([math.sqrt(a * a + b * b + c * c + 2 * z) / 6, math.sqrt(a * a + b * b + c * c - 2 * z) / 6])
    assert sorted([a0.norm().item(), a1.norm().item()]) == pytest.approx(semi, rel=1e-9)
    assert abs(torch.dot(a0, a1).item()) < 1e-12  # principal axes
    normal = torch.linalg.cross(tri[1] - tri[0], tri[2] - tri[0])
    assert torch.allclose(n, -normal / normal.norm() * NORMAL_SCALE, atol=1e-12)  # f1×f2: against the winding
    # tangent to each side at its midpoint: the midpoints lie on the ellipse c + a0 cos t + a1 sin t
    centre = tri.mean(0)
    for i, j in ((0, 1), (1, 2), (2, 0)):
        d = (tri[i] + tri[j]) / 2 - centre
        u, v = torch.dot(d, a0) / a0.norm() ** 2, torch.dot(d, a1) / a1.norm() ** 2
        assert (u * u + v * v).item() == pytest.approx(1.0, abs=1e-9)


def test_covariance_follows_a_rotated_and_moved_triangle():
    gen = torch.Generator().manual_seed(0)
    tri = torch.rand(5, 3, 3, generator=gen, dtype=torch.float64)
    faces = np.arange(15).reshape(5, 3)
    params = FaceParams(torch.rand(5, 3, generator=gen, dtype=torch.float64),
                        torch.randn(5, 3, generator=gen, dtype=torch.float64),
                        torch.rand(5, 3, generator=gen, dtype=torch.float64) + 0.5,
                        torch.randn(5, 3, generator=gen, dtype=torch.float64) * 0.1)
    g = gaussians_on_faces(tri.reshape(-1, 3), faces, params)
    r = torch.from_numpy(rotation([0.3, -1.0, 0.5], 70.0))
    shift = torch.tensor([0.5, -2.0, 1.0], dtype=torch.float64)
    moved = gaussians_on_faces(tri.reshape(-1, 3) @ r.T + shift, faces, params)
    assert torch.allclose(moved.covars, r @ g.covars @ r.T, atol=1e-12)
    assert torch.allclose(moved.means, g.means @ r.T + shift, atol=1e-12)
    assert torch.allclose(moved.colors, params.rgb)


def test_initial_gaussian_sits_on_the_face_centroid_with_the_steiner_covariance():
    tri = torch.tensor([[0.0, 0, 0], [1, 0, 0], [0.2, 0.8, 0]], dtype=torch.float64)
    g = gaussians_on_faces(tri, np.array([[0, 1, 2]]), FaceParams.initial(1, torch.float64))
    t = steiner_frame(tri)
    assert torch.allclose(g.means[0], tri.mean(0))
    assert torch.allclose(g.covars[0], t @ t.T)
    assert torch.equal(g.opacities, torch.ones(1, dtype=torch.float64))


def test_so3_exp_is_a_rotation_and_smooth_at_zero():
    w = torch.tensor([[0.0, 0.0, 0.0], [0.0, 0.0, math.pi / 2], [1e-6, 0, 0]], requires_grad=True)
    r = so3_exp(w)
    assert torch.allclose(r[1] @ torch.tensor([1.0, 0, 0]), torch.tensor([0.0, 1, 0]), atol=1e-6)
    assert torch.allclose(r @ r.transpose(-1, -2), torch.eye(3).expand(3, 3, 3), atol=1e-6)
    r.sum().backward()
    assert torch.isfinite(w.grad).all()


def test_subdivision_vertices_are_exact_midpoint_blends():
    sub = subdivide(TETRA, 4, levels=2)
    assert len(sub.faces) == 4 * 16 and sub.n_fine_vertices == 4 + 6 + 24
    assert np.allclose(sub.weights.sum(1), 1.0)
    # every fine vertex blends the corners of the coarse face it lies in
    assert all(set(sub.indices[v][sub.weights[v] > 0]) <= set(TETRA[sub.parent[f]])
               for f in range(len(sub.faces)) for v in sub.faces[f])
    fine = sub.fine_vertices(TETRA_XYZ)
    assert torch.equal(fine[:4], TETRA_XYZ)
    # a reference subdivision by explicit midpoints, level by level
    one = subdivide(TETRA, 4, levels=1)
    mid = one.fine_vertices(TETRA_XYZ)
    for f, (a, b, c) in enumerate(TETRA):
        corners = one.faces[4 * f + 3]  # the middle child: the three edge midpoints
        expected = torch.stack([(TETRA_XYZ[a] + TETRA_XYZ[b]) / 2, (TETRA_XYZ[b] + TETRA_XYZ[c]) / 2,
                                (TETRA_XYZ[c] + TETRA_XYZ[a]) / 2])
        assert torch.equal(mid[corners], expected)
    two = subdivide(one.faces, one.n_fine_vertices, levels=1).fine_vertices(mid)
    assert torch.allclose(fine, two, atol=0)  # two levels at once == one level twice
    # the fine mesh stays closed and its faces keep the coarse orientation
    edges = np.sort(np.concatenate([sub.faces[:, [0, 1]], sub.faces[:, [1, 2]], sub.faces[:, [2, 0]]]), 1)
    assert (np.unique(edges, axis=0, return_counts=True)[1] == 2).all()
    fn = torch.linalg.cross(fine[sub.faces[:, 1]] - fine[sub.faces[:, 0]], fine[sub.faces[:, 2]] - fine[sub.faces[:, 0]])
    cn = torch.linalg.cross(TETRA_XYZ[TETRA[:, 1]] - TETRA_XYZ[TETRA[:, 0]], TETRA_XYZ[TETRA[:, 2]] - TETRA_XYZ[TETRA[:, 0]])
    assert ((fn * cn[sub.parent]).sum(-1) > 0).all()


def test_reposing_moves_gaussians_with_their_faces():
    rest = body.rest_body()
    coarse = body.coarse_template()
    sub = subdivide(coarse.faces, coarse.n_vertices, levels=1)
    gen = torch.Generator().manual_seed(1)
    params = FaceParams.initial(len(sub.faces), torch.float64).residual(
        so3=0.3 * torch.randn(len(sub.faces), 3, generator=gen, dtype=torch.float64),
        offset=0.2 * torch.randn(len(sub.faces), 3, generator=gen, dtype=torch.float64))
    avatar = GoMAvatar(coarse.vertices(rest.vertices), coarse.lbs_weights(), sub, params)
    pose = Pose(elbow_l=120, arm_raise_l=80, knee_r=90, yaw=30)
    t = pose_transforms(rest, pose)
    canon, posed = avatar.gaussians(pose_transforms(rest, Pose())), avatar.gaussians(t)
    assert (posed.means - canon.means).norm(dim=-1).max() > 0.3
    # Gaussians on faces skinned entirely to the left forearm (and the bones that move with it: the hand)
    # move rigidly with that bone
    t_rest = pose_transforms(rest, Pose())
    j = body.bone_labels().index("lowerarm01.L")
    group = [k for k in range(len(t)) if torch.allclose(t[k], t[j]) and torch.allclose(t_rest[k], t_rest[j])]
    rigid_vertices = avatar.lbs_weights[:, group].sum(1) > 1 - 1e-9
    faces = np.where(rigid_vertices.numpy()[sub.indices[sub.faces]].all((1, 2)))[0]
    assert len(faces) > 50
    g = t[j] @ torch.linalg.inv(t_rest[j])
    expected = canon.means[faces] @ g[:3, :3].T + g[:3, 3]
    assert torch.allclose(posed.means[faces], expected, atol=1e-9)
    assert torch.allclose(posed.covars[faces], g[:3, :3] @ canon.covars[faces] @ g[:3, :3].T, atol=1e-12)
    # every Gaussian stays attached to its own posed face: centroid + T·offset
    fine = avatar.posed_fine_vertices(t)
    tri = fine[torch.from_numpy(sub.faces)]
    again = tri.mean(1) + (steiner_frame(tri) @ params.offset[..., None])[..., 0]
    assert torch.allclose(posed.means, again)


def test_coarse_xyz_gradients_reach_every_gaussian():
    rest = body.rest_body()
    coarse = body.coarse_template()
    sub = subdivide(coarse.faces, coarse.n_vertices, levels=1)
    xyz = coarse.vertices(rest.vertices).float().requires_grad_(True)
    avatar = GoMAvatar(xyz, coarse.lbs_weights().float(), sub, FaceParams.initial(len(sub.faces)))
    g = avatar.gaussians(pose_transforms(rest, Pose()).float())
    (g.means.sum() + g.covars.sum()).backward()
    assert torch.isfinite(xyz.grad).all() and (xyz.grad.abs().sum(1) > 0).all()
