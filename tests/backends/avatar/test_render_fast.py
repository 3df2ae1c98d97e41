"""The compiled tile renderer draws the torch reference's image (float32 tolerance)."""

import math

import pytest
import torch

from backends.avatar.gom import Gaussians
from backends.avatar.render import EPS2D, render, render_torch
from backends.avatar.render_fast import TILE, render_fast

F = 40.0
EYE = torch.eye(4)


def intrinsics(w, h):
    return torch.tensor([[F, 0, w / 2], [0, F, h / 2], [0, 0, 1]])


def random_gaussians(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    means = torch.cat([torch.rand(n, 2, generator=gen) * 1.6 - 0.8, 1.2 + 2 * torch.rand(n, 1, generator=gen)], 1)
    a = torch.randn(n, 3, 3, generator=gen) * 0.04
    covars = a @ a.transpose(-1, -2) + 1e-6 * torch.eye(3)
    return Gaussians(means, covars, torch.rand(n, 3, generator=gen), torch.rand(n, generator=gen))


@pytest.mark.parametrize("size", [(60, 45), (37, 70)])  # sizes that are not multiples of the tile
def test_random_gaussians_match_the_torch_renderer(size):
    w, h = size
    assert w % TILE or h % TILE
    g = random_gaussians(1500)
    bg = torch.tensor([0.1, 0.7, 0.3])
    ref = render_torch(g, EYE, intrinsics(w, h), w, h, background=bg)
    out = render_fast(g, EYE, intrinsics(w, h), w, h, background=bg)
    assert out.rgb.shape == (h, w, 3) and out.alpha.shape == (h, w)
    assert ref.alpha.max() > 0.9 and (ref.alpha > 0).float().mean() > 0.5  # a busy image, many overlaps
    assert torch.allclose(out.rgb, ref.rgb, atol=2e-4)
    assert torch.allclose(out.alpha, ref.alpha, atol=2e-4)
    seen = ref.alpha > 0.05
    assert torch.allclose(out.depth[seen], ref.depth[seen], atol=2e-3)


def test_rotated_camera_matches_the_torch_renderer():
    g = random_gaussians(800, seed=3)
    angle = 0.3
    view = torch.eye(4)
    view[:3, :3] = torch.tensor([[math.cos(angle), 0, math.sin(angle)], [0, 1, 0],
                                 [-math.sin(angle), 0, math.cos(angle)]])
    view[:3, 3] = torch.tensor([0.2, -0.1, 0.4])
    ref = render_torch(g, view, intrinsics(48, 48), 48, 48)
    out = render_fast(g, view, intrinsics(48, 48), 48, 48)
    assert ref.alpha.sum() > 100
    assert torch.allclose(out.rgb, ref.rgb, atol=2e-4) and torch.allclose(out.alpha, ref.alpha, atol=2e-4)


def test_two_gaussians_by_hand():
    w = h = 32
    front = ([0.0, 0.0, 1.5], 0.06, [1.0, 0.0, 0.0], 0.6)
    back = ([0.0, 0.0, 3.0], 0.2, [0.0, 0.0, 1.0], 0.8)
    for pair in ((front, back), (back, front)):
        means, sigmas, colors, opac = zip(*pair, strict=True)
        g = Gaussians(torch.tensor(means), torch.stack([torch.eye(3) * s * s for s in sigmas]), torch.tensor(colors),
                      torch.tensor(opac))
        out = render_fast(g, EYE, intrinsics(w, h), w, h)

        def a(depth, sigma, opacity):  # at the pixel (16, 16), whose centre is 0.5 px off the axis in x and y
            return opacity * math.exp(-0.5 * 0.5 / ((F * sigma / depth) ** 2 + EPS2D))

        a1, a2 = a(1.5, 0.06, 0.6), a(3.0, 0.2, 0.8)
        assert out.rgb[16, 16, 0].item() == pytest.approx(a1, abs=1e-6)
        assert out.rgb[16, 16, 1].item() == pytest.approx(0.0, abs=1e-7)
        assert out.rgb[16, 16, 2].item() == pytest.approx((1 - a1) * a2, abs=1e-6)
        assert out.alpha[16, 16].item() == pytest.approx(a1 + (1 - a1) * a2, abs=1e-6)
        depth = (a1 * 1.5 + (1 - a1) * a2 * 3.0) / (a1 + (1 - a1) * a2)
        assert out.depth[16, 16].item() == pytest.approx(depth, abs=1e-5)


def test_early_termination_and_culling_as_in_3dgs():
    w = h = 32
    n = 6
    g = Gaussians(torch.tensor([[0.0, 0.0, 1.0 + 0.1 * i] for i in range(n)]), torch.eye(3).expand(n, 3, 3) * 0.09,
                  torch.ones(n, 3), torch.ones(n))
    out = render_fast(g, EYE, intrinsics(w, h), w, h, background=torch.tensor([0.0, 1.0, 0.0]))
    a = math.exp(-0.5 * 0.5 / ((F * 0.3) ** 2 + EPS2D))
    assert out.alpha[16, 16].item() == pytest.approx(a, abs=1e-6)  # the second would drop T under 1e-4: stop
    assert out.depth[16, 16].item() == pytest.approx(1.0, abs=1e-6)
    gone = Gaussians(torch.tensor([[0.0, 0.0, -1.0], [5.0, 0.0, 1.0]]), torch.eye(3).expand(2, 3, 3) * 0.01,
                     torch.ones(2, 3), torch.ones(2))
    empty = render_fast(gone, EYE, intrinsics(w, h), w, h)
    assert empty.alpha.abs().max() == 0 and empty.rgb.abs().max() == 0


def test_render_dispatches_to_the_fast_backend():
    g = random_gaussians(200, seed=5)
    a = render(g, EYE, intrinsics(32, 32), 32, 32, backend="fast")
    b = render_fast(g, EYE, intrinsics(32, 32), 32, 32)
    assert torch.equal(a.rgb, b.rgb)
    with pytest.raises(ValueError):
        render(g, EYE, intrinsics(32, 32), 32, 32, backend="nope")
