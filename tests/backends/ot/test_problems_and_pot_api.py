"""DOTmark-style problems and costs (backends/ot/problems.py); the solver in POT's conventions (pot_api.py)."""

from __future__ import annotations

import numpy as np
import ot
import pytest
import torch

from backends.common.errors import InputError
from backends.ot import problems as pr
from backends.ot.pot_api import tnt, tnt_plan


@pytest.mark.parametrize("cls", pr.DENSITY_CLASSES)
def test_densities_are_reproducible_probability_densities(cls):
    d = pr.density(cls, 12, seed=4)
    assert d.shape == (12, 12) and d.dtype == np.float64
    assert d.min() >= 0 and d.sum() == pytest.approx(1.0, abs=1e-14)
    assert np.array_equal(d, pr.density(cls, 12, seed=4))
    assert not np.array_equal(d, pr.density(cls, 12, seed=5))


def test_random_fields_get_smoother_with_the_class():
    """Neighbouring pixels correlate more in a smooth field than in a rough one, and white noise least."""

    def neighbour_corr(img):
        return np.corrcoef(img[:, :-1].ravel(), img[:, 1:].ravel())[0, 1]

    corr = {c: np.mean([neighbour_corr(pr.density(c, 32, s)) for s in range(3)])
            for c in ("white_noise", "grf_rough", "grf_smooth")}
    assert corr["white_noise"] < corr["grf_rough"] < corr["grf_smooth"]


def test_costs_on_the_unit_grid():
    sq = pr.grid_cost(3, "sqeuclidean")
    l1 = pr.grid_cost(3, "l1")
    assert sq.shape == (9, 9) and sq.dtype == torch.float64
    for c in (sq, l1):
        assert float(c.min()) == 0.0 and float(c.max()) == 1.0
        assert torch.allclose(c, c.T) and float(c.diagonal().abs().max()) == 0.0
    # pixels (0,0) and (0,1): 0.5 apart in [0, 1] coordinates; the corners are the farthest pair (max)
    assert float(sq[0, 1]) == pytest.approx(0.25 / 2.0)
    assert float(l1[0, 1]) == pytest.approx(0.5 / 2.0)
    raw = pr.cost_matrix(pr.grid_coordinates(3), cost="l1", normalize=False)
    assert float(raw.max()) == pytest.approx(2.0)
    with pytest.raises(InputError, match="Unknown cost"):
        pr.grid_cost(3, "euclid")
    with pytest.raises(InputError, match="Unknown density"):
        pr.density("stripes", 8)


@pytest.fixture(scope="module")
def problems():
    return [pr.grid_problem(12, "cauchy", seed=1, cost="sqeuclidean"),
            pr.grid_problem(12, "grf_moderate", seed=2, cost="l1")]


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log")  # POT's log(a) where a pixel has no mass
def test_tnt_is_a_drop_in_for_ot_solve(problems):
    """Same arguments as ot.solve(M, a, b, reg=...), the same result fields, the same numbers (to the tolerance)."""
    for p in problems:
        a, b, M = p.a.numpy(), p.b.numpy(), p.C.numpy()
        reg = 1.0 / 64
        mine = tnt(a, b, M, reg, tol=1e-11)
        ref = ot.solve(M, a, b, reg=reg, max_iter=100000, tol=1e-13)
        assert isinstance(mine, ot.utils.OTResult) and isinstance(mine.plan, np.ndarray)
        assert mine.status == "converged"
        assert np.abs(mine.plan - ref.plan).sum() < 1e-8
        assert mine.value_linear == pytest.approx(ref.value_linear, abs=1e-9)
        assert mine.value == pytest.approx(ref.value, abs=1e-8)
        keep_a, keep_b = a > 0, b > 0
        du = (mine.potentials[0] - ref.potentials[0])[keep_a]
        dv = (mine.potentials[1] - ref.potentials[1])[keep_b]
        assert np.ptp(du) < 1e-6 and np.ptp(dv) < 1e-6
        # POT's own marginals helper reads the plan: exactly a and b (the plan is rounded)
        assert np.abs(mine.marginal_a - a).max() < 1e-12 and np.abs(mine.marginal_b - b).max() < 1e-12


def test_tnt_at_weak_regularisation_is_close_to_emd_and_keeps_torch(problems):
    p = problems[1]
    exact = ot.emd2(p.a.numpy(), p.b.numpy(), p.C.numpy())
    res = tnt(p.a, p.b, p.C, reg=2.0**-12)
    assert isinstance(res.plan, torch.Tensor) and res.plan.dtype == torch.float64
    assert isinstance(res.potentials[0], torch.Tensor)
    assert abs(res.value_linear - exact) / exact < 1e-2
    plan, log = tnt_plan(p.a.numpy(), p.b.numpy(), p.C.numpy(), 2.0**-6, log=True)
    assert isinstance(plan, np.ndarray) and log["log_u"].shape == (144,)
    assert log["gamma"] == 64.0 and log["plan_marginal_error"] < 1e-12


def test_tnt_uniform_weights_and_bad_reg():
    x = pr.point_cloud("uniform", 20, seed=0)
    y = pr.point_cloud("mixture", 30, seed=0)
    M = pr.cost_matrix(x, y).numpy()
    res = tnt(None, np.array([]), M, reg=1.0 / 128)
    assert res.plan.shape == (20, 30)
    assert np.abs(res.plan.sum(1) - 1 / 20).max() < 1e-12 and np.abs(res.plan.sum(0) - 1 / 30).max() < 1e-12
    with pytest.raises(InputError, match="reg"):
        tnt(None, None, M, reg=0.0)
