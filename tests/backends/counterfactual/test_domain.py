"""The domain check: a Mahalanobis distance on classifier features with a held-out threshold."""

import numpy as np

from backends.counterfactual.domain import DomainModel, DomainVerdict, fit_domain


def test_held_out_points_pass_and_far_points_are_flagged(tmp_path):
    rng = np.random.default_rng(0)
    scale = np.linspace(0.1, 3.0, 16)  # an elongated cloud: a Euclidean radius would get it wrong
    domain = fit_domain(rng.normal(size=(2000, 16)) * scale)
    inside = domain.distance(rng.normal(size=(1000, 16)) * scale)
    assert (inside <= domain.threshold).mean() > 0.99
    far = np.zeros((1, 16))
    far[0, 0] = 5.0  # 50 standard deviations along the narrow axis, yet nearer the mean than most points
    assert domain.distance(far)[0] > domain.threshold
    loaded = DomainModel.load(domain.save(tmp_path).parent)
    assert np.allclose(loaded.distance(far), domain.distance(far), rtol=1e-4)
    assert DomainModel.load(tmp_path / "nowhere") is None


def test_the_verdict_warns_only_outside():
    assert DomainVerdict(3.0, 6.0).warning == ""
    assert "not meaningful" in DomainVerdict(12.0, 6.0).warning
