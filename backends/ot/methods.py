"""Every solver of the comparison, traced the same way: (solver seconds, marginal error, rounded cost) points.

Methods (one name everywhere, the bench's keys): ``tnt`` (the suite's MDOT-TNT, :mod:`.solver`), ``sinkhorn`` and
``sinkhorn_log`` (POT's ``ot.bregman.sinkhorn_knopp`` / ``sinkhorn_log``), ``sinkhorn_eps_scaling`` (POT's
``sinkhorn_epsilon_scaling``), ``emd`` (POT's exact network simplex) and ``mdot_tnt`` (the authors' package, only
where installed: the bench's optional peer, never used by the app).

How each is traced (the times are the solver's own; computing a point's rounded cost is left out):

* ``tnt``: one solve; a point after every Newton step and every annealing step (γ from 16 to 1/ε).
* ``sinkhorn`` / ``sinkhorn_log``: POT called in chunks of iterations, each warm-started from the last chunk's
  scalings (the same iterates as one long call; each call also rebuilds the kernel exp(−M/ε), counted).
* ``sinkhorn_eps_scaling``: POT's own call with more and more outer iterations, each run from scratch and timed
  alone (its ε schedule restarts); a point per run.
* ``emd``: one call; one point (marginal error 0, the exact cost).

A point's cost is that of the plan rounded onto U(a, b) (Altschuler et al.), so every method is judged by a
feasible plan. ``budget`` seconds per method: past it the trace stops, said so.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from backends.common.errors import InputError

METHODS = ("tnt", "sinkhorn", "sinkhorn_log", "sinkhorn_eps_scaling", "emd")
PEERS = ("mdot_tnt",)
LABELS = {"tnt": "MDOT-TNT (this suite)", "sinkhorn": "Sinkhorn (POT)", "sinkhorn_log": "log-domain Sinkhorn (POT)",
          "sinkhorn_eps_scaling": "ε-scaling Sinkhorn (POT)", "emd": "exact EMD (POT)", "mdot_tnt": "mdot-tnt (authors)"}
CHUNK_SECONDS = 0.5  # a Sinkhorn chunk is sized to about this long, so a Stop or the budget ends it soon


@dataclass
class Point:
    seconds: float
    marginal_error: float  # L1, of the unrounded plan (relative to the mass)
    cost: float  # of the rounded, feasible plan
    iterations: int


@dataclass
class MethodRun:
    method: str
    points: list[Point] = field(default_factory=list)
    status: str = "finished"  # "finished", "budget", "failed"
    message: str = ""

    def end(self) -> Point | None:
        return self.points[-1] if self.points else None

    def to_json(self, exact: float | None = None) -> dict:
        end = self.end()
        gap = None if end is None or exact is None else relative_gap(end.cost, exact)
        return {"method": self.method, "label": LABELS[self.method], "status": self.status, "message": self.message,
                "seconds": None if end is None else end.seconds, "iterations": None if end is None else end.iterations,
                "marginal_error": None if end is None else end.marginal_error,
                "cost": None if end is None else end.cost, "relative_gap": gap,
                "trace": [[p.seconds, p.marginal_error, p.cost, p.iterations] for p in self.points]}


def relative_gap(cost: float, exact: float) -> float:
    """(cost − exact) / exact, floored at 0 (a feasible plan costs at least the exact optimum, up to rounding)."""
    return max(0.0, (cost - exact) / exact) if exact > 0 else max(0.0, cost - exact)


class _Budget:
    """The run's Stop and the method's time budget in one ``raise_if_cancelled``."""

    def __init__(self, cancel, deadline: float):
        self.cancel, self.deadline = cancel, deadline

    def raise_if_cancelled(self) -> None:
        if self.cancel is not None:
            self.cancel.raise_if_cancelled()
        if time.perf_counter() > self.deadline:
            raise _OverBudget


class _OverBudget(Exception):
    pass


def _round_cost(P: torch.Tensor, a: torch.Tensor, b: torch.Tensor, C: torch.Tensor) -> tuple[float, float]:
    from .solver import marginal_error, round_to_polytope

    P = torch.nan_to_num(P, nan=0.0, posinf=0.0)
    return marginal_error(P, a, b), float((round_to_polytope(P, a, b) * C).sum())


def run_method(method: str, a, b, C, epsilon: float, *, budget: float = 30.0, cancel=None,
               on_point: Callable[[str, Point], None] | None = None, gamma_max: float | None = None) -> MethodRun:
    """Trace ``method`` on (a, b, C) at ε = ``epsilon`` (C in [0, 1]; a, b sum to 1; float64 torch or numpy)."""
    if method not in METHODS + PEERS:
        raise InputError(f"Unknown method {method!r}; choose from {', '.join(METHODS + PEERS)}.")
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0):
        raise InputError(f"ε must be a positive number (got {epsilon!r}).")
    a_t, b_t, C_t = (torch.as_tensor(np.asarray(x, dtype=np.float64)) if not isinstance(x, torch.Tensor) else
                     x.to(torch.float64) for x in (a, b, C))
    run = MethodRun(method)

    def add(point: Point) -> None:
        run.points.append(point)
        if on_point is not None:
            on_point(method, point)

    try:
        {"tnt": _tnt, "sinkhorn": _sinkhorn, "sinkhorn_log": _sinkhorn, "sinkhorn_eps_scaling": _eps_scaling,
         "emd": _emd, "mdot_tnt": _mdot}[method](run, a_t, b_t, C_t, epsilon, budget, cancel, add)
    except _OverBudget:
        run.status, run.message = "budget", f"stopped at its budget of {budget:g} s"
    return run


def _tnt(run, a, b, C, epsilon, budget, cancel, add):
    from .solver import solve

    start = time.perf_counter()
    token = _Budget(cancel, start + budget)

    def progress(step):
        add(Point(step.seconds, step.marginal_error, step.cost, step.newton_steps))

    res = solve(a, b, C, gamma=1.0 / epsilon, progress=progress, cancel=token, return_plan=False)
    run.message = res.message
    if not res.converged:
        run.status = "failed"


def _support(a: torch.Tensor, b: torch.Tensor, C: torch.Tensor):
    """POT's Sinkhorn divides by the histograms: it is given the problem on their support (as a user would), and
    its plan is put back into the full n × m shape; ``embed`` does that."""
    ia, ib = torch.nonzero(a > 0).ravel(), torch.nonzero(b > 0).ravel()
    sub = C[ia][:, ib]

    def embed(P: np.ndarray) -> torch.Tensor:
        full = torch.zeros(C.shape, dtype=torch.float64)
        full[ia[:, None], ib[None, :]] = torch.from_numpy(np.asarray(P, dtype=np.float64))
        return full

    return a[ia].numpy(), b[ib].numpy(), sub.contiguous().numpy(), embed


def _sinkhorn(run, a, b, C, epsilon, budget, cancel, add):
    import ot

    fn = ot.bregman.sinkhorn_knopp if run.method == "sinkhorn" else ot.bregman.sinkhorn_log
    a_np, b_np, C_np, embed = _support(a, b, C)
    warm, done, solver_time, per_iter = None, 0, 0.0, None
    chunk = 10
    while True:
        if cancel is not None:
            cancel.raise_if_cancelled()
        if solver_time > budget:
            raise _OverBudget
        t = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            P, log = fn(a_np, b_np, C_np, epsilon, numItermax=chunk, stopThr=0.0, log=True, warn=False,
                        warmstart=warm)
        took = time.perf_counter() - t
        solver_time += took
        numerical = any("numerical errors" in str(w.message) for w in caught)
        ran = int(log.get("niter", chunk - 1)) + 1 if not numerical else int(log.get("niter", 0))
        done += ran
        warm = (np.log(log["u"]), np.log(log["v"])) if run.method == "sinkhorn" else (log["log_u"], log["log_v"])
        if not np.all(np.isfinite(P)) or float(P.sum()) <= 0:
            run.status = "failed"
            run.message = (f"the kernel exp(−C/ε) underflows at ε = {epsilon:.3g}: the plan is no longer a number. "
                           "Use log-domain Sinkhorn, MDOT-TNT or a larger ε.")
            return
        err, cost = _round_cost(embed(P), a, b, C)
        add(Point(solver_time, err, cost, done))
        if numerical:
            run.status = "failed"
            run.message = (f"numerical errors after {done} iterations (the kernel exp(−C/ε) underflows at "
                           f"ε = {epsilon:.3g}); the last finite plan is shown. Use log-domain Sinkhorn, "
                           "MDOT-TNT or a larger ε.")
            return
        if err <= 1e-9:
            run.message = f"marginal error ≤ 1e-9 after {done} iterations"
            return
        per_iter = took / max(1, ran)
        chunk = int(max(10, min(chunk * 2, CHUNK_SECONDS / max(per_iter, 1e-9))))


def _eps_scaling(run, a, b, C, epsilon, budget, cancel, add):
    import ot

    a_np, b_np, C_np, embed = _support(a, b, C)
    outer, spent = 2, 0.0
    while True:
        if cancel is not None:
            cancel.raise_if_cancelled()
        if spent > 2 * budget:
            raise _OverBudget
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            P = ot.bregman.sinkhorn_epsilon_scaling(a_np, b_np, C_np, epsilon, numItermax=outer, stopThr=1e-9,
                                                    warn=False)
        took = time.perf_counter() - t
        spent += took
        if not np.all(np.isfinite(P)):
            run.status, run.message = "failed", "the plan is no longer a number (NaN)"
            return
        err, cost = _round_cost(embed(P), a, b, C)
        previous = run.points[-1] if run.points else None
        add(Point(took, err, cost, outer))
        if took > budget:
            raise _OverBudget
        if err <= 1e-9 or (previous is not None and err > 0.5 * previous.marginal_error and outer > 40):
            run.message = f"marginal error {err:.1e} with {outer} outer iterations (no longer improving)"
            return
        outer *= 2


def _emd(run, a, b, C, epsilon, budget, cancel, add):
    from .exact import emd

    exact = emd(a.numpy(), b.numpy(), C.numpy(), cancel=cancel, num_iter_max=10_000_000, want_plan=False)
    add(Point(exact.seconds, 0.0, exact.cost, 0))
    run.message = exact.warning or "exact (network simplex)"


def _mdot(run, a, b, C, epsilon, budget, cancel, add):  # the bench's optional peer (non-commercial licence)
    from mdot_tnt import solve_OT

    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = solve_OT(a, b, C, gamma_f=1.0 / epsilon, return_plan=True, round=True)
    took = time.perf_counter() - t
    err, cost = _round_cost(plan.to(torch.float64), a, b, C)
    add(Point(took, err, cost, 0))


def mdot_available() -> bool:
    try:
        import mdot_tnt  # noqa: F401
    except ImportError:
        return False
    return True


def exact_cost(a, b, C, cancel=None) -> float:
    """⟨P*, C⟩ by POT's network simplex (the reference of every cost gap); a Stop on ``cancel`` ends it."""
    from .exact import emd

    a_np, b_np, C_np = (np.asarray(x.cpu().numpy() if isinstance(x, torch.Tensor) else x, dtype=np.float64)
                        for x in (a, b, C))
    return emd(a_np, b_np, C_np, cancel=cancel, num_iter_max=10**9, want_plan=False).cost

