import numpy as np
import pytest
import torch

from backends.counterfactual.pipeline import AdamStabilizer, rescale_for_classifier
from backends.counterfactual.schedule import BridgeSchedule, corrupt


def test_schedule_is_symmetric_and_marginals_interpolate():
    s = BridgeSchedule(1000)
    assert torch.allclose(s.betas, s.betas.flip(0))
    assert (s.std_fwd[1:] > s.std_fwd[:-1]).all() and (s.std_bwd[1:] < s.std_bwd[:-1]).all()
    assert torch.allclose(s.mu_x0 + s.mu_x1, torch.ones_like(s.mu_x0))
    assert s.mu_x0[0] > 0.999 and s.mu_x1[-1] > 0.999  # x0 at the start, x1 at the end
    assert s.std_sb[500] == s.std_sb.max()


def test_label_and_pred_x0_invert_each_other():
    s = BridgeSchedule(1000)
    g = torch.Generator().manual_seed(0)
    x0, x1 = torch.rand(2, 3, 8, 8, generator=g), torch.rand(2, 3, 8, 8, generator=g)
    n = torch.tensor([10, 700])
    xt = s.q_sample(n, x0, x1, generator=g)
    assert torch.allclose(s.pred_x0(n, xt, s.label(n, x0, xt)), x0, atol=1e-5)


def test_posterior_with_true_x0_walks_back_to_x0():
    s = BridgeSchedule(1000)
    x0, x1 = torch.zeros(1, 3, 4, 4), torch.ones(1, 3, 4, 4)
    steps = s.sampling_steps(600, 20)
    assert steps[0] == 599 and steps[-1] == 0 and len(steps) == 21
    xt = s.q_sample(steps[0], x0, x1, ot_ode=True)
    for n, prev in zip(steps[:-1], steps[1:], strict=True):
        xt = s.posterior(prev, n, xt, x0)
    assert xt.abs().max() < 0.01


def test_corrupt_keeps_outside_and_noises_inside():
    x0 = torch.full((1, 3, 8, 8), 0.3)
    m = torch.zeros(1, 1, 8, 8)
    m[..., 2:5, 2:5] = 1
    x1 = corrupt(x0, m, torch.Generator().manual_seed(0))
    assert torch.equal(x1 * (1 - m), x0 * (1 - m)) and (x1[..., 2:5, 2:5] != 0.3).all()


def test_adam_stabilizer_first_step_is_sign():
    g = torch.tensor([3.0, -0.001, 0.0])
    out = AdamStabilizer()(g)
    assert torch.allclose(out[:2], torch.tensor([1.0, -1.0]), atol=1e-3) and out[2] == 0


def test_minmax_rescale_spans_unit_range():
    x = torch.rand(2, 3, 4, 4) * 0.5 - 0.2
    r = rescale_for_classifier(x, "minmax")
    assert torch.allclose(r.amin((1, 2, 3)), torch.zeros(2)) and torch.allclose(r.amax((1, 2, 3)), torch.ones(2))


def region():
    m = torch.zeros(1, 1, 16, 16)
    m[..., 4:12, 5:11] = 1
    return m


def test_pixels_outside_the_region_are_the_input_exactly(tiny_pipeline):
    g = torch.Generator().manual_seed(1)
    x = torch.rand(1, 3, 16, 16, generator=g) * 2 - 1
    m = region()
    out = tiny_pipeline(x, m, target=2, num_inference_steps=6, num_images_per_prompt=3, generator=g)
    assert out.images.shape == (3, 3, 16, 16)
    outside = (m == 0).expand_as(out.images)
    assert torch.equal(out.images[outside], x.expand(3, -1, -1, -1)[outside])
    assert not torch.equal(out.images[~outside], x.expand(3, -1, -1, -1)[~outside])


def test_guidance_raises_the_target_probability(tiny_pipeline):
    x = torch.zeros(1, 3, 16, 16)
    m = region()
    clf = tiny_pipeline.classifier

    def p_target(scale, **kw):
        out = tiny_pipeline(x, m, target=3, num_inference_steps=8, guidance_scale=scale, num_images_per_prompt=4,
                            generator=torch.Generator().manual_seed(0), **kw)
        with torch.no_grad():
            return torch.softmax(clf((out.images + 1) / 2), 1)[:, 3].mean().item()

    base = p_target(0.0)
    assert p_target(1.5) > base
    assert p_target(0.05, guidance="noisy", stabilize=False) >= base - 1e-6


def test_sampler_is_deterministic_given_the_generator(tiny_pipeline):
    x = torch.zeros(1, 3, 16, 16)
    a = tiny_pipeline(x, region(), 1, num_inference_steps=4, generator=torch.Generator().manual_seed(5)).images
    b = tiny_pipeline(x, region(), 1, num_inference_steps=4, generator=torch.Generator().manual_seed(5)).images
    assert torch.equal(a, b)


def test_bridge_save_load_round_trip(tiny_models, tmp_path):
    from backends.counterfactual.networks import BridgeDenoiser, ShapeClassifier

    bridge, clf = tiny_models
    bridge.save(tmp_path / "b")
    clf.save(tmp_path / "c")
    x, m = torch.rand(1, 3, 16, 16), region()
    with torch.no_grad():
        assert torch.allclose(BridgeDenoiser.load(tmp_path / "b")(x, 5, m), bridge(x, 5, m), atol=1e-6)
        assert torch.allclose(ShapeClassifier.load(tmp_path / "c")(x), clf(x), atol=1e-6)


def test_bridge_without_mask_channel_like_i2sb():
    from backends.counterfactual.networks import BridgeDenoiser

    from .conftest import TINY_BRIDGE

    net = BridgeDenoiser.from_config({**TINY_BRIDGE, "in_channels": 3})
    assert not net.mask_channel
    assert net(torch.rand(2, 3, 16, 16), 3).shape == (2, 3, 16, 16)
    with pytest.raises(ValueError):
        BridgeDenoiser.from_config(TINY_BRIDGE)(torch.rand(1, 3, 16, 16), 3)


def test_freeform_masks_cover_the_requested_range():
    from backends.counterfactual.masks import random_freeform_mask, resize_mask

    rng = np.random.default_rng(0)
    cover = [random_freeform_mask(rng, 32, (0.2, 0.3)).mean() for _ in range(30)]
    assert min(cover) >= 0.2 and max(cover) < 0.6
    thin = np.zeros((256, 256), np.uint8)
    thin[100, 10:200] = 255  # a one-pixel stroke survives downscaling
    assert resize_mask(thin, (32, 32)).sum() >= 20


def test_auto_region_respects_area_and_cells(tiny_models):
    from backends.counterfactual.regions import auto_region, cells_to_mask

    _, clf = tiny_models
    region_ = auto_region(clf, torch.rand(1, 3, 16, 16), target=1, cell=4, area=0.25, samples=2)
    assert region_.mask.shape == (16, 16) and region_.mask.mean() == pytest.approx(0.25)
    assert region_.heatmap.max() <= 1 and region_.heatmap.min() >= 0
    heat = np.zeros((16, 16))
    heat[0:4, 8:12] = 1.0
    mask, _ = cells_to_mask(heat, 4, 1 / 16)
    assert mask[0:4, 8:12].all() and mask.sum() == 16


def test_frechet_distance_is_zero_for_same_and_grows_with_shift():
    from backends.counterfactual.metrics import frechet_distance

    rng = np.random.default_rng(0)
    a = rng.normal(size=(400, 6))
    assert frechet_distance(a, a) == pytest.approx(0, abs=1e-6)
    near, far = frechet_distance(a, a + 0.1), frechet_distance(a, a + 1.0)
    assert 0 < near < far and far == pytest.approx(6.0, rel=0.05)
