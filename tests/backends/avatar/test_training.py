"""The reconstructor's synthetic data and training step (training.avatar_data, training.avatar_reconstructor)."""

import random

import numpy as np
import torch

from backends.avatar import body
from backends.avatar.network import ReconstructorConfig, save_reconstructor
from training.avatar_data import N_INPUT, N_NOVEL_POSE, N_TARGET, TEST_SEED0, make_subject
from training.avatar_reconstructor import (
    Subject,
    image_scores,
    init_from,
    new_model,
    paired,
    split_views,
    ssim_torch,
    step_loss,
    uniform_laplacian,
)

TINY = ReconstructorConfig(n_views=3, image_size=48, feat_dim=8, vertex_dim=16, point_dim=8, heads=2,
                           vertex_layers=1, n_iters=2, encoder_width=8)


def _project(points: np.ndarray, viewmat: np.ndarray, K: np.ndarray) -> np.ndarray:
    cam = points @ viewmat[:3, :3].T + viewmat[:3, 3]
    return (cam[:, :2] / cam[:, 2:]) * K[[0, 1], [0, 1]] + K[:2, 2]


def test_subject_views_masks_and_cameras_agree():
    arrays = make_subject(7, 48)
    k = N_INPUT + N_TARGET + N_NOVEL_POSE
    assert arrays["rgb"].shape == (k, 48, 48, 3) and arrays["mask"].shape == (k, 48, 48)
    assert arrays["transforms"].shape[0] == 2 and arrays["template"].shape == (body.coarse_template().n_vertices, 3)
    lbs = body.coarse_template().lbs_weights()
    for j in range(k):
        mask = arrays["mask"][j].astype(bool)
        assert 0.03 < mask.mean() < 0.5
        assert (arrays["rgb"][j][~mask] == 0).all()
        # the subject's coarse body, skinned into this view's pose, projects onto the ray-cast silhouette
        t = torch.from_numpy(arrays["transforms"][arrays["pose_index"][j]]).double()
        posed = body.skin(torch.from_numpy(arrays["template"]).double(), lbs, t).numpy()
        uv = np.floor(_project(posed, arrays["viewmats"][j], arrays["Ks"][j])).astype(int)
        inside = (uv >= 0).all(1) & (uv < 48).all(1)
        assert inside.all()
        grown = mask.copy()  # one pixel of slack for vertices on the silhouette's edge
        grown[1:] |= mask[:-1]
        grown[:-1] |= mask[1:]
        grown[:, 1:] |= grown[:, :-1].copy()
        grown[:, :-1] |= grown[:, 1:].copy()
        assert grown[uv[:, 1], uv[:, 0]].mean() > 0.98
        # and a camera moved sideways by a metre does not match it (the check can fail)
        shifted = arrays["viewmats"][j].copy()
        shifted[0, 3] += 1.0
        uv2 = np.floor(_project(posed, shifted, arrays["Ks"][j])).astype(int).clip(0, 47)
        assert grown[uv2[:, 1], uv2[:, 0]].mean() < 0.6
    # two poses: the novel-pose views differ from the input pose's
    assert not np.allclose(arrays["transforms"][0], arrays["transforms"][1])


def test_subjects_are_seeded_and_test_seeds_are_disjoint():
    a, b = make_subject(3, 32), make_subject(3, 32)
    assert all(np.array_equal(a[k], b[k]) for k in ("rgb", "mask", "viewmats", "transforms"))
    c = make_subject(TEST_SEED0 + 3, 32)
    assert not np.array_equal(a["rgb"], c["rgb"])


def test_training_step_targets_unseen_views_and_has_finite_gradients():
    torch.manual_seed(0)
    s = Subject.from_arrays(make_subject(11, 48))
    rng = random.Random(0)
    for _ in range(20):
        inputs, targets = split_views(s, rng)
        assert 1 <= len(inputs) <= 5 and not set(inputs) & set(targets)
        assert any(s.pose_index[j] == 1 for j in targets)  # a novel pose is always supervised
    model = new_model(TINY)
    lap = uniform_laplacian(model.coarse_faces, len(model.template_xyz))
    loss, train_psnr = step_loss(model, s, [0, 1, 2], [3, 6], lap)
    loss.backward()
    assert torch.isfinite(loss) and 5 < train_psnr < 60
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert len(grads) == len(list(model.parameters())) > 0  # the loss reaches every parameter
    assert all(torch.isfinite(g).all() for g in grads)
    assert model.rgb_head[-1].weight.grad.abs().sum() > 0


def test_laplacian_and_metrics():
    faces = np.array([[0, 1, 2], [0, 2, 3]])
    lap = uniform_laplacian(faces, 4).to_dense()
    assert torch.allclose(lap.sum(1), torch.zeros(4), atol=1e-6)  # constant displacements cost nothing
    img = torch.rand(16, 16, 3)
    assert abs(ssim_torch(img, img).item() - 1) < 1e-5 and ssim_torch(img, torch.rand(16, 16, 3)).item() < 0.5
    mask = np.zeros((16, 16))
    mask[4:8, 4:8] = 1
    gt = np.zeros((16, 16, 3))
    scores = image_scores(gt + 0.1, gt, mask)
    assert abs(scores["psnr"] - 20) < 1e-6 and abs(scores["psnr_full"] - 20) < 1e-6


def test_face_feedback_starts_as_the_checkpoint_and_iteration_weights_change_the_loss(tmp_path):
    """A fine-tuning run that adds the render-residual input to the face heads starts from a checkpoint
    without it exactly (the new inputs get zero weights), then learns to use them (they get gradient)."""
    from dataclasses import replace

    torch.manual_seed(0)
    s = Subject.from_arrays(make_subject(12, 48))
    base = new_model(TINY)
    save_reconstructor(base, tmp_path / "base")
    fed = new_model(replace(TINY, face_feedback=True))
    assert fed.rgb_head[0].weight.shape[1] == base.rgb_head[0].weight.shape[1] + TINY.feat_dim
    init_from(fed, tmp_path / "base")
    with torch.no_grad():
        a, b = base(s.views([0, 1, 2]))[-1][0], fed(s.views([0, 1, 2]))[-1][0]
    assert torch.allclose(a.params.rgb, b.params.rgb) and torch.allclose(a.coarse_xyz, b.coarse_xyz)
    lap = uniform_laplacian(fed.coarse_faces, len(fed.template_xyz))
    equal, _ = step_loss(fed, s, [0, 1, 2], [3, 6], lap)
    same, _ = step_loss(fed, s, [0, 1, 2], [3, 6], lap, [2.0, 2.0])
    last, _ = step_loss(fed, s, [0, 1, 2], [3, 6], lap, [0.0, 1.0])
    assert torch.allclose(equal, same) and not torch.allclose(equal, last)
    last.backward()
    assert fed.rgb_head[0].weight.grad[:, -TINY.feat_dim:].abs().sum() > 0  # the residual input is used


def test_paired_difference_sees_a_small_consistent_gain_that_unpaired_intervals_hide():
    rng = np.random.default_rng(0)
    base = rng.normal(22, 3, size=(10, 6))  # 10 subjects × 6 images, a wide spread between images
    gain = 0.1 + rng.normal(0, 0.05, size=base.shape)

    def scores(v):
        return {"novel_view": [{"psnr": x} for x in v[:, :3].ravel()], "novel_pose": [{"psnr": x} for x in v[:, 3:].ravel()]}

    out = paired(scores(base + gain), scores(base), 10)
    assert out["images"] == 60 and abs(out["psnr_diff"] - gain.mean()) < 1e-9
    assert out["psnr_diff_ci95"] < 0.05 < 3 * 1.96 / np.sqrt(60)  # far tighter than the unpaired interval
    assert out["psnr_diff"] - out["psnr_diff_ci95_subjects"] > 0 and out["images_better"] > 0.9
    flat = paired(scores(base), scores(base + rng.normal(0, 0.5, size=base.shape)), 10)
    assert abs(flat["psnr_diff"]) < flat["psnr_diff_ci95"] * 2  # no gain: the interval covers (about) zero
