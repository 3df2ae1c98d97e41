import math

import numpy as np
import pytest
import torch

from backends.avatar import render as render_mod
from backends.avatar.gom import Gaussians
from backends.avatar.render import EPS2D, render, render_torch

W = H = 32
F = 40.0
K = torch.tensor([[F, 0, W / 2], [0, F, H / 2], [0, 0, 1]], dtype=torch.float64)
EYE = torch.eye(4, dtype=torch.float64)


def gaussians(means, sigmas, colors, opacities):
    means = torch.tensor(means, dtype=torch.float64)
    covars = torch.stack([torch.eye(3, dtype=torch.float64) * s * s for s in sigmas])
    return Gaussians(means, covars, torch.tensor(colors, dtype=torch.float64),
                     torch.tensor(opacities, dtype=torch.float64))


def test_single_isotropic_gaussian_renders_its_analytic_footprint():
    z, sigma, opacity = 2.0, 0.1, 0.9
    out = render(gaussians([[0.0, 0.0, z]], [sigma], [[1.0, 0.5, 0.25]], [opacity]), EYE, K, W, H)
    var = (F * sigma / z) ** 2 + EPS2D  # projected variance in px², with the low-pass dilation
    c = torch.arange(W, dtype=torch.float64) + 0.5 - W / 2
    d2 = c[None, :] ** 2 + c[:, None] ** 2
    expected = opacity * torch.exp(-0.5 * d2 / var)
    radius = math.ceil(3 * math.sqrt(var))
    box = (c.abs()[None, :] <= radius) & (c.abs()[:, None] <= radius)
    expected = torch.where(box & (expected >= 1 / 255), expected, torch.zeros_like(expected))
    assert torch.allclose(out.alpha, expected, atol=1e-9)
    assert torch.allclose(out.rgb, expected[..., None] * torch.tensor([1.0, 0.5, 0.25], dtype=torch.float64))
    assert torch.allclose(out.depth[out.alpha > 0], torch.full_like(out.depth[out.alpha > 0], z))
    # off-centre and anisotropic: the footprint follows the pinhole projection of the mean
    shifted = render(gaussians([[0.26, -0.11, z]], [sigma], [[1.0, 1.0, 1.0]], [opacity]), EYE, K, W, H)
    peak = np.unravel_index(shifted.alpha.argmax().item(), (H, W))
    assert peak == (math.floor(H / 2 + F * -0.11 / z), math.floor(W / 2 + F * 0.26 / z))


def test_two_gaussians_composite_front_to_back_whatever_their_order():
    front = ([0.0, 0.0, 1.5], 0.06, [1.0, 0.0, 0.0], 0.6)
    back = ([0.0, 0.0, 3.0], 0.2, [0.0, 0.0, 1.0], 0.8)
    for pair in ((front, back), (back, front)):
        g = gaussians(*[list(x) for x in zip(*pair, strict=True)])
        out = render(g, EYE, K, W, H)
        # hand-computed at the pixel (16, 16) whose centre is 0.5 px off the axis in x and y
        def a(depth, sigma, opacity):
            var = (F * sigma / depth) ** 2 + EPS2D
            return opacity * math.exp(-0.5 * 0.5 / var)
        a1, a2 = a(1.5, 0.06, 0.6), a(3.0, 0.2, 0.8)
        px = out.rgb[16, 16]
        assert px[0].item() == pytest.approx(a1, abs=1e-9)
        assert px[2].item() == pytest.approx((1 - a1) * a2, abs=1e-9)
        assert out.alpha[16, 16].item() == pytest.approx(a1 + (1 - a1) * a2, abs=1e-9)
        expected_depth = (a1 * 1.5 + (1 - a1) * a2 * 3.0) / (a1 + (1 - a1) * a2)
        assert out.depth[16, 16].item() == pytest.approx(expected_depth, abs=1e-9)


def test_opaque_stack_stops_at_the_transmittance_floor():
    g = gaussians([[0.0, 0.0, 1.0 + 0.1 * i] for i in range(6)], [0.3] * 6, [[1.0, 1.0, 1.0]] * 6, [1.0] * 6)
    out = render(g, EYE, K, W, H, background=torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64))
    # alpha ≈ 0.998 each at this pixel: after the first, T = 0.0017; the second would bring it to 3e-6
    # < 1e-4, so it and all behind it are skipped (as in 3DGS / gsplat)
    a = math.exp(-0.5 * 0.5 / ((F * 0.3) ** 2 + EPS2D))
    assert out.alpha[16, 16].item() == pytest.approx(a, abs=1e-12)
    assert out.rgb[16, 16].tolist() == pytest.approx([a, 1.0, a], abs=1e-12)  # white over the green background
    assert out.depth[16, 16].item() == pytest.approx(1.0)


def test_behind_the_camera_and_outside_the_image_render_nothing():
    g = gaussians([[0.0, 0.0, -1.0], [5.0, 0.0, 1.0]], [0.1, 0.1], [[1.0, 1.0, 1.0]] * 2, [1.0, 1.0])
    out = render(g, EYE, K, W, H)
    assert out.alpha.abs().max() == 0 and out.rgb.abs().max() == 0


def test_row_bands_give_the_same_image(monkeypatch):
    gen = torch.Generator().manual_seed(0)
    n = 300
    means = torch.cat([torch.rand(n, 2, generator=gen) - 0.5, 1.5 + torch.rand(n, 1, generator=gen)], 1).double()
    g = Gaussians(means, torch.eye(3, dtype=torch.float64).expand(n, 3, 3) * 0.03 ** 2,
                  torch.rand(n, 3, generator=gen).double(), torch.rand(n, generator=gen).double())
    whole = render_torch(g, EYE, K, W, H)
    monkeypatch.setattr(render_mod, "MAX_PAIRS", 500)
    banded = render_torch(g, EYE, K, W, H)
    assert torch.allclose(whole.rgb, banded.rgb) and torch.allclose(whole.alpha, banded.alpha)


def test_gradients_flow_to_every_gaussian_parameter():
    g = gaussians([[0.05, 0.0, 2.0], [-0.05, 0.02, 2.5]], [0.1, 0.15], [[1.0, 0.2, 0.2], [0.2, 0.2, 1.0]],
                  [0.7, 0.9])
    for t in (g.means, g.covars, g.colors, g.opacities):
        t.requires_grad_(True)
    out = render(g, EYE, K, W, H)
    target = torch.zeros(H, W, 3, dtype=torch.float64)
    ((out.rgb - target) ** 2).sum().add(out.alpha.sum()).backward()
    for t in (g.means, g.covars, g.colors, g.opacities):
        assert torch.isfinite(t.grad).all() and t.grad.abs().sum() > 0
    # the gradient of a mean points the way the image changes (finite-difference check in x)
    def loss(dx):
        gg = gaussians([[0.05 + dx, 0.0, 2.0]], [0.1], [[1.0, 1.0, 1.0]], [0.7])
        return (render(gg, EYE, K, W, H).alpha * torch.arange(W, dtype=torch.float64)).sum()
    gg = gaussians([[0.05, 0.0, 2.0]], [0.1], [[1.0, 1.0, 1.0]], [0.7])
    gg.means.requires_grad_(True)
    (render(gg, EYE, K, W, H).alpha * torch.arange(W, dtype=torch.float64)).sum().backward()
    fd = (loss(1e-5) - loss(-1e-5)) / 2e-5
    assert gg.means.grad[0, 0].item() == pytest.approx(fd.item(), rel=1e-3)


def test_avatar_gaussians_cover_the_ground_truth_silhouette_fast():
    from backends.avatar import body, data
    from backends.avatar.gom import FaceParams, GoMAvatar, subdivide
    from backends.avatar.pose import pose_transforms, preset

    rest = body.rest_body()
    coarse = body.coarse_template()
    sub = subdivide(coarse.faces, coarse.n_vertices, levels=2)
    avatar = GoMAvatar(coarse.vertices(rest.vertices).float(), coarse.lbs_weights().float(), sub,
                       FaceParams.initial(len(sub.faces)))
    pose = preset("walking")
    cam = data.camera_ring(3, 128)[1]
    truth = data.render_view(data.Subject(), pose, cam, rest)
    g = avatar.gaussians(pose_transforms(rest, pose).float())
    assert 15_000 <= len(g.means) <= 30_000
    viewmat, k = torch.from_numpy(cam.extrinsics).float(), torch.from_numpy(cam.intrinsics).float()
    out = render(g, viewmat, k, 128, 128, backend="torch")
    assert torch.allclose(render(g, viewmat, k, 128, 128, backend="fast").alpha, out.alpha, atol=1e-4)
    big = data.camera_ring(3, 512)[1]
    big_view, big_k = torch.from_numpy(big.extrinsics).float(), torch.from_numpy(big.intrinsics).float()
    # the tile renderer at 512² (its speed against the torch rasterizer: bench.avatar's render_512 ratio)
    fast = render(g, big_view, big_k, 512, 512, backend="fast")
    assert (fast.alpha > 0.5).float().mean().item() == pytest.approx((out.alpha > 0.5).float().mean().item(), rel=0.3)  # 1 px fringe at 128²
    mask = out.alpha.numpy() > 0.5
    gt = truth.mask > 0.5
    # the initial Gaussians (Steiner axes ×2, unit scale) cover the body and spill ~1 px past its outline
    assert (mask & gt).sum() / gt.sum() > 0.97
    assert (mask & gt).sum() / mask.sum() > 0.7
    both = mask & gt
    assert np.median(np.abs(out.depth.numpy()[both] - truth.depth[both])) < 0.02  # metres


@pytest.mark.skipif(not render_mod.gsplat_available("cuda"), reason="needs CUDA and gsplat (the [gpu] extra)")
def test_torch_and_gsplat_renderers_agree():
    gen = torch.Generator().manual_seed(0)
    n = 2000
    means = torch.cat([torch.rand(n, 2, generator=gen) - 0.5, 1.5 + torch.rand(n, 1, generator=gen)], 1)
    a = torch.randn(n, 3, 3, generator=gen) * 0.03
    g = Gaussians(means, a @ a.transpose(-1, -2) + 1e-6 * torch.eye(3), torch.rand(n, 3, generator=gen),
                  torch.rand(n, generator=gen))
    k, eye = K.float(), EYE.float()
    ours = render(g, eye, k, W, H, backend="torch")
    cuda = Gaussians(*(t.cuda() for t in (g.means, g.covars, g.colors, g.opacities)))
    theirs = render(cuda, eye, k, W, H, backend="gsplat")
    assert torch.allclose(ours.rgb, theirs.rgb.cpu(), atol=2e-3)
    assert torch.allclose(ours.alpha, theirs.alpha.cpu(), atol=2e-3)
