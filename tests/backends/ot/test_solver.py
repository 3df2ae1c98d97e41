"""MDOT-TNT (backends/ot/solver.py) against POT's exact EMD and log-domain Sinkhorn, on 16×16 grids (n = 256)."""

from __future__ import annotations

import numpy as np
import ot
import pytest
import torch

from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken
from backends.ot import problems as pr
from backends.ot.solver import WORKING_COPIES, TNTStep, round_to_polytope, solve

COSTS = ("sqeuclidean", "l1")


@pytest.fixture(scope="module")
def grid16():
    """Two smooth Gaussian-random-field densities (seeds 0, 1) on a 16×16 grid per cost, and their exact cost."""
    out = {}
    for cost in COSTS:
        p = pr.grid_problem(16, "grf_smooth", seed=0, cost=cost)
        exact = ot.emd2(p.a.numpy(), p.b.numpy(), p.C.numpy(), numItermax=10**7)
        out[cost] = (p, float(exact))
    return out


@pytest.mark.parametrize("cost", COSTS)
def test_rounded_plan_has_the_marginals_and_the_gap_shrinks_with_gamma(grid16, cost):
    """The plan is feasible to 1e-12 at every γ; its cost gap to ot.emd2 falls as γ grows, below 1e-2 at γ = 2¹²."""
    p, exact = grid16[cost]
    gaps = []
    for gamma in (2.0**6, 2.0**9, 2.0**12):
        res = solve(p.a, p.b, p.C, gamma=gamma, track_cost=False)
        assert res.converged and res.gamma == gamma, res.message
        plan = res.plan
        assert float((plan.sum(1) - p.a).abs().max()) < 1e-12
        assert float((plan.sum(0) - p.b).abs().max()) < 1e-12
        assert float(plan.min()) >= 0.0
        assert res.cost == pytest.approx(float((plan * p.C).sum()), rel=1e-12)
        gap = (res.cost - exact) / exact
        assert gap > -1e-9, "a feasible plan cannot beat the exact optimum"
        gaps.append(gap)
        # the entropic plan itself meets the published tolerance ε(γ) = H_min / γ^1.5 (ε/2 per side, plus smoothing)
        h_min = min(float(-torch.special.xlogy(p.a, p.a).sum()), float(-torch.special.xlogy(p.b, p.b).sum()))
        assert res.marginal_error < 2.0 * h_min / gamma**1.5
    assert gaps[0] > gaps[1] > gaps[2], gaps
    assert gaps[2] < 1e-2, gaps


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log")  # POT's log(a) where a pixel has no mass
def test_same_plan_as_pot_sinkhorn_log_at_moderate_epsilon(grid16):
    """At ε = 1/64 the solver (tightened with tol) and POT's sinkhorn_log find the same plan and potentials."""
    p, _ = grid16["sqeuclidean"]
    a, b, C = p.a.numpy(), p.b.numpy(), p.C.numpy()
    reg = 1.0 / 64
    ref, log = ot.sinkhorn(a, b, C, reg, method="sinkhorn_log", numItermax=100000, stopThr=1e-13, log=True)
    res = solve(p.a, p.b, p.C, gamma=1.0 / reg, tol=1e-11)
    assert res.converged, res.message
    assert np.abs(res.plan.numpy() - ref).sum() < 1e-8
    # potentials agree up to the dual's constant shift (u + s, v − s), on the support of the marginals
    du = (res.u.numpy() - log["log_u"])[a > 0]
    dv = (res.v.numpy() - log["log_v"])[b > 0]
    assert np.ptp(du) < 1e-6 and np.ptp(dv) < 1e-6
    assert abs(du.mean() + dv.mean()) < 1e-6


def test_progress_per_step_and_history(grid16):
    p, _ = grid16["l1"]
    steps: list[TNTStep] = []
    res = solve(p.a, p.b, p.C, gamma=2.0**8, progress=steps.append)
    kinds = {s.kind for s in steps}
    assert kinds == {"newton", "anneal"}
    assert sum(s.kind == "anneal" for s in steps) == res.iterations["annealing_steps"]
    assert sum(s.kind == "newton" for s in steps) == res.iterations["newton_steps"]
    assert len(res.history) == len(steps)
    secs = [h.seconds for h in res.history]
    assert secs == sorted(secs)
    assert steps[-1].fraction == 1.0 and steps[-1].gamma == 2.0**8
    assert all(h.cost is not None and h.cost > 0 for h in res.history)
    assert "γ" in steps[0].message


def test_cancel_stops_at_the_next_step(grid16):
    """A Stop raised during the first reported step ends the solve before another step is reported."""
    p, _ = grid16["sqeuclidean"]
    token = CancelToken()
    seen: list[TNTStep] = []

    def on_step(step: TNTStep) -> None:
        seen.append(step)
        token.cancel("stop pressed")

    with pytest.raises(Cancelled, match="stop pressed"):
        solve(p.a, p.b, p.C, gamma=2.0**12, progress=on_step, cancel=token)
    assert len(seen) == 1


def test_memory_refusal_names_the_largest_n():
    limit = pr.dense_bytes(300, dtype=torch.float64)  # room for one 300 × 300 float64 array
    assert pr.largest_n(limit) == 300
    with pytest.raises(pr.ProblemTooLarge) as info:
        pr.grid_cost(32, limit_bytes=limit)  # n = 1,024: 8 MiB > 0.69 MiB
    err = info.value
    assert isinstance(err, InputError)
    assert err.largest_n == 300 and err.need_bytes == 8 * 1024**2
    assert "n = 300" in str(err) and "1024 × 1024" in str(err)
    p = pr.grid_problem(8, "white_noise")  # n = 64: the solver wants its cost and a plan
    with pytest.raises(pr.ProblemTooLarge) as info2:
        solve(p.a, p.b, p.C, gamma=64.0, limit_bytes=pr.dense_bytes(64) * (WORKING_COPIES - 0.5))
    assert info2.value.largest_n == pr.largest_n(pr.dense_bytes(64) * (WORKING_COPIES - 0.5), copies=WORKING_COPIES)
    assert info2.value.largest_n < 64 <= info2.value.largest_n_float32  # a float32 cost would fit
    assert f"n = {info2.value.largest_n_float32}" in str(info2.value) and "float32" in str(info2.value)
    assert pr.solver_cost_dtype(64, 64, limit_bytes=pr.dense_bytes(64) * (WORKING_COPIES - 0.5)) == torch.float32
    res = solve(p.a, p.b, p.C.float(), gamma=64.0, limit_bytes=pr.dense_bytes(64) * (WORKING_COPIES - 0.5))
    assert res.cost_dtype == "float32" and res.dtype == "float64" and res.plan.dtype == torch.float64
    assert res.cost == pytest.approx(solve(p.a, p.b, p.C, gamma=64.0).cost, rel=1e-6)


def test_blocked_operations_match_the_whole_array_ones(monkeypatch):
    """Row blocks (as n = 128² uses them) give what one block gives, to rounding."""
    import backends.ot.dense as dense

    p = pr.grid_problem(10, "grf_moderate", "cauchy", seed=4, cost="l1")
    whole = solve(p.a, p.b, p.C, gamma=2.0**9)
    monkeypatch.setattr(dense, "BLOCK_ENTRIES", 7 * 100)  # 7 rows a block, the last one short
    blocked = solve(p.a, p.b, p.C, gamma=2.0**9)
    assert blocked.cost == pytest.approx(whole.cost, rel=1e-9)
    assert float((blocked.plan - whole.plan).abs().max()) < 1e-9


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"a": [0.5, -0.1, 0.6]}, "non-negative"),
        ({"a": [0.2, 0.2, 0.2]}, "same total mass"),
        ({"a": [0.0, 0.0, 0.0], "b": [0.0, 0.0, 0.0]}, "zero total mass"),
        ({"gamma": 0.0}, "positive"),
        ({"gamma": -5.0}, "positive"),
        ({"a": [np.nan, 0.5, 0.5]}, "not finite"),
        ({"a": [0.5, 0.5]}, "entries"),
        ({"C": np.ones(3)}, "matrix"),
        ({"tol": 0.0}, "tolerance"),
    ],
)
def test_bad_input_is_refused_with_a_message(kwargs, match):
    args = {"a": [0.3, 0.3, 0.4], "b": [0.2, 0.5, 0.3], "C": np.eye(3)[::-1].copy(), "gamma": 64.0, "tol": None}
    args.update(kwargs)
    with pytest.raises(InputError, match=match):
        solve(args["a"], args["b"], args["C"], gamma=args["gamma"], tol=args["tol"])


def test_point_clouds_with_zero_mass_pixels_and_any_total_mass():
    """Point clouds of different kinds, masses summing to 3, and a shapes density with empty pixels all round exactly."""
    p = pr.cloud_problem(100, "gaussian", "ring", seed=3, cost="sqeuclidean")
    res = solve(p.a * 3.0, p.b * 3.0, p.C, gamma=2.0**9)
    assert res.converged
    assert float((res.plan.sum(1) - 3.0 * p.a).abs().max()) < 1e-12
    exact = ot.emd2(3.0 * p.a.numpy(), 3.0 * p.b.numpy(), p.C.numpy())
    assert exact <= res.cost < exact * 1.1
    q = pr.grid_problem(10, "shapes", "cauchy", seed=2, cost="l1")
    assert float((q.a == 0).sum()) > 0
    res = solve(q.a, q.b, q.C, gamma=2.0**9)
    assert res.converged
    assert float((res.plan.sum(1) - q.a).abs().max()) < 1e-12
    assert float(res.plan[q.a == 0].abs().max()) == 0.0


def test_rounding_is_exact_on_any_nonnegative_matrix():
    g = torch.Generator().manual_seed(0)
    P = torch.rand(7, 5, generator=g, dtype=torch.float64)
    r = torch.rand(7, generator=g, dtype=torch.float64)
    r /= r.sum()
    c = torch.rand(5, generator=g, dtype=torch.float64)
    c /= c.sum()
    F = round_to_polytope(P, r, c)
    assert float((F.sum(1) - r).abs().max()) < 1e-15 and float((F.sum(0) - c).abs().max()) < 1e-15
    assert float(F.min()) >= 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(grid16):
    p, exact = grid16["sqeuclidean"]
    cpu = solve(p.a, p.b, p.C, gamma=2.0**10)
    gpu = solve(p.a.cuda(), p.b.cuda(), p.C.cuda(), gamma=2.0**10)
    assert gpu.plan.device.type == "cuda" and gpu.device.startswith("cuda")
    assert gpu.cost == pytest.approx(cpu.cost, rel=1e-6)
    assert float((gpu.plan.sum(1) - p.a.cuda()).abs().max()) < 1e-12


def test_a_failed_projection_returns_the_previous_gamma_feasibly(grid16):
    """As published: when a projection fails (here CG capped at 1 iteration), the solver stops with the last
    γ that succeeded, says so, and still returns a feasible plan."""
    p, exact = grid16["sqeuclidean"]
    res = solve(p.a, p.b, p.C, gamma=2.0**12, max_cg=1)
    assert not res.converged
    assert res.gamma < 2.0**12 and "stopped at γ" in res.message
    assert float((res.plan.sum(1) - p.a).abs().max()) < 1e-12
    assert res.cost >= exact - 1e-12


def test_float32_runs_at_moderate_gamma(grid16):
    p, exact = grid16["l1"]
    res = solve(p.a, p.b, p.C, gamma=2.0**7, dtype=torch.float32)
    assert res.plan.dtype == torch.float32 and res.dtype == "float32"
    assert float((res.plan.sum(1) - p.a.float()).abs().max()) < 1e-6
    assert 0 <= (res.cost - exact) / exact < 0.1
