"""The truncated Newton method for entropic optimal transport (MDOT-TNT; Kemertas, Farahmand, Jepson, ICLR 2025).

Written for this suite from the paper and the method notes in ``shared/reference/new-papers.md`` (§1); the
authors' ``mdot-tnt`` package (non-commercial licence) is neither copied nor imported.

The problem: min over plans P ∈ U(r, c) of ⟨P, C⟩ − H(P)/γ. Its dual is solved with P = exp(u_i + v_j − γ C_ij):

* **Annealing** (mirror descent in γ). γ starts at ``gamma_init`` (16) and grows by a factor q until
  ``gamma`` (γ_f); q starts at 2 and adapts to how well the Newton steps did: δ, the ratio of the actual to the
  predicted L1 error reduction of each Newton step, gives q ← √q when min δ < 0.5 and q ← q² when min δ > 0.9
  (a projection with no Newton step counts as δ = 1). Each γ is solved to the tolerance ε(γ) = H_min / γ^1.5
  (H_min the smaller entropy of the two marginals) against marginals smoothed towards uniform by ε/2 (90 % of
  it on r, 10 % on c), and is warm-started by extrapolating (u, v) linearly in γ from the last two solutions.
* **Projection** at fixed γ: a column Sinkhorn update; χ²-Sinkhorn sweeps until Σ (r − r_P)² / r_P ≤ ε_d^(2/5);
  then, while ‖r_P − r‖₁ > ε_d (= ε/2), a **Newton step on u with v eliminated**: solve
  (diag(r_P) − ρ P diag(1/c) Pᵀ) Δu = −(r_P − r) **inexactly** by Jacobi-preconditioned conjugate gradients
  (truncated at a residual of η·err, forcing term η = max(err, 0.9 ε_d / err)), Δv = −diag(1/c) Pᵀ Δu, an
  Armijo backtracking line search on the dual objective, then a column Sinkhorn update and χ²-Sinkhorn sweeps
  again. ρ ∈ [0, 1) discounts the (singular) Hessian's low-rank part: it grows (ρ ← 1 − (1 − ρ)/4) while CG's
  undiscounted residual stays above the target, shrinks after each step (ρ ← max(0, 1 − 4(1 − ρ))) and resets
  to 0 on negative curvature. A last row Sinkhorn update ends the projection.
* **Stopping**: each projection stops on its marginal error (L1); the solver stops when γ = γ_f. A Newton step
  that fails (CG, descent or line search) ends its projection; as published, the projection still counts as a
  success when its error is below 10 × its tolerance (the annealing goes on from there, without the last row
  update; counted in ``iterations["relaxed_projections"]``), and otherwise stops the solver with the previous
  γ's duals — the result says so (``converged`` False, ``gamma`` < the target).
* **Rounding** onto U(a, b) of the *original* marginals (Altschuler, Weed, Rigollet 2017): rows scaled by
  min(1, r / r(P)), columns by min(1, c / c(P)), plus the rank-one correction err_r err_cᵀ / ‖err_r‖₁. The
  returned plan is feasible to machine precision; its cost ⟨P, C⟩ is the reported ``cost``.

Deviations from the published method (each small, each for robustness here):

* The forcing term η is capped at 0.9 (published: uncapped; it only exceeds 1 when the L1 error is above 1).
* The Jacobi preconditioner's non-positive entries are replaced by the smallest positive one at every ρ
  (published: at ρ = 1 only, from which the CG start is taken).
* H_min is floored at 1e-2 so a (near-)Dirac marginal does not make the tolerance zero.
* An optional ``tol`` tightens the last γ's projection tolerance (and smoothing) below ε(γ_f)/2, so the
  entropic plan of a given γ can be computed to a chosen precision (used to compare with POT's Sinkhorn);
  without it the schedule is the published one.
* The Armijo test Σ c(P_new) − 1 ≤ 0.99 α (−gᵀΔu) allows 100 machine epsilons of rounding noise in the sum
  (published: none). At tolerances below ~1e-8 the predicted decrease (~err²) falls under float64's rounding
  of a sum of probabilities and the exact test rejects every step (seen with ``tol`` = 1e-11: "line search
  found no sufficient decrease"); the published schedule never asks for that precision.
* Caps (χ²-Sinkhorn sweeps, Newton steps per projection) turn a stall into a reported failure instead of a hang
  (the Newton cap ends a projection like a failed step: accepted below 10 × its tolerance).

Cancellation is checked before every Newton step, every χ²-Sinkhorn sweep, every annealing step, every line-search
halving and every CG iteration (a Stop ends the solve within one O(n²) operation or so); a progress callback receives a :class:`TNTStep` after each Newton step and each annealing step.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from backends.common.errors import InputError

from .dense import BlockedCost
from .problems import check_solver_fits

WORKING_COPIES = 2  # dense n × m arrays alive at once: the cost and one plan (the rest in row blocks, .dense)


class _Cancellable(Protocol):
    def raise_if_cancelled(self) -> None: ...


@dataclass(frozen=True)
class TNTStep:
    """One reported step: a Newton step inside a projection, or the end of an annealing step (one γ)."""

    kind: str  # "newton" or "anneal"
    gamma: float
    gamma_target: float
    seconds: float
    marginal_error: float  # ‖r(P) − a‖₁ + ‖c(P) − b‖₁ of the current (unrounded) entropic plan, mass-normalized
    cost: float | None  # ⟨round(P), C⟩, the cost of the current plan made feasible (None if not tracked)
    newton_steps: int
    annealing_steps: int
    gamma_start: float = 16.0

    @property
    def fraction(self) -> float:
        """Progress in log γ from the first γ to the target (γ drives the work; the last γ usually costs most)."""
        lo = math.log(min(self.gamma_start, self.gamma_target))
        hi = math.log(self.gamma_target)
        return 1.0 if hi <= lo else max(0.0, min(1.0, (math.log(self.gamma) - lo) / (hi - lo)))

    @property
    def message(self) -> str:
        cost = "" if self.cost is None else f", cost {self.cost:.6g}"
        return (f"{self.kind} step: γ = {self.gamma:.4g} of {self.gamma_target:.4g}, marginal error "
                f"{self.marginal_error:.2e}{cost}")


@dataclass(frozen=True)
class HistoryEntry:
    """A point of the solve: solver seconds so far (the time spent recording earlier points left out), the
    unrounded plan's L1 marginal error and the rounded plan's cost."""

    seconds: float
    marginal_error: float
    cost: float | None
    gamma: float
    kind: str


@dataclass
class TNTResult:
    """What :func:`solve` returns.

    ``plan`` is the rounded (feasible) plan, scaled to the input mass; ``cost`` = ⟨plan, C⟩. ``u``, ``v`` are the
    log-domain dual potentials of the *unrounded* entropic plan at γ = ``gamma``: P_ij = exp(u_i + v_j − γ C_ij)
    (POT's ``log_u`` / ``log_v`` of ``sinkhorn_log`` with reg = 1/γ). ``marginal_error`` is that unrounded plan's
    L1 marginal error to the inputs (relative to the mass); ``plan_marginal_error`` the rounded plan's (≈ 1e-16).
    """

    plan: torch.Tensor | None
    cost: float
    u: torch.Tensor
    v: torch.Tensor
    gamma: float
    gamma_target: float
    marginal_error: float
    plan_marginal_error: float
    converged: bool
    message: str
    iterations: dict[str, int]
    history: list[HistoryEntry] = field(default_factory=list)
    seconds: float = 0.0  # the whole call, the history's measurements included
    device: str = "cpu"
    dtype: str = "float64"
    measuring_seconds: float = 0.0  # spent recording the history (its seconds leave it out: solver time only)
    cost_dtype: str = "float64"  # how the cost was stored (float32 where float64 did not fit; .dense)

    @property
    def potentials(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(f, g) in cost units: P_ij = exp((f_i + g_j − C_ij) γ)."""
        return self.u / self.gamma, self.v / self.gamma


# --- small pieces ------------------------------------------------------------------------------------------------


def _entropy(p: torch.Tensor) -> float:
    return float(-torch.special.xlogy(p, p).sum())


def round_to_polytope(P: torch.Tensor, r: torch.Tensor, c: torch.Tensor, *, inplace: bool = False) -> torch.Tensor:
    """Altschuler et al. (2017) rounding of a non-negative P onto U(r, c) (r, c of equal mass); a new tensor, or P
    itself with ``inplace`` (the solver's way: no second n × m array)."""
    row = P.sum(1)
    x = torch.where(row > 0, torch.clamp(r / torch.where(row > 0, row, 1.0), max=1.0), torch.zeros_like(row))
    F = P.mul_(x[:, None]) if inplace else P * x[:, None]  # the rest is in place
    col = F.sum(0)
    y = torch.where(col > 0, torch.clamp(c / torch.where(col > 0, col, 1.0), max=1.0), torch.zeros_like(col))
    F.mul_(y[None, :])
    err_r = (r - F.sum(1)).clamp(min=0.0)
    err_c = (c - F.sum(0)).clamp(min=0.0)
    total = err_r.sum()
    if total > 0:
        F.addr_(err_r / total, err_c)
    return F


def marginal_error(P: torch.Tensor, r: torch.Tensor, c: torch.Tensor) -> float:
    """‖P1 − r‖₁ + ‖Pᵀ1 − c‖₁."""
    return float((P.sum(1) - r).abs().sum() + (P.sum(0) - c).abs().sum())


class _ProjectionFailed(Exception):
    pass


# --- the projection at one γ -----------------------------------------------------------------------------------


class _Projector:
    """The inner solver: keeps the discount ρ across projections and counts the work."""

    def __init__(self, cancel: _Cancellable | None, on_newton: Callable[[torch.Tensor, torch.Tensor], None],
                 max_cg: int, max_sweeps: int, max_newton: int):
        self.rho = 0.0
        self.cancel = cancel
        self.on_newton = on_newton
        self.max_cg, self.max_sweeps, self.max_newton = max_cg, max_sweeps, max_newton
        self.newton_steps = self.cg_iterations = self.sinkhorn_sweeps = self.line_search_evals = 0
        self.roundoff = 0.0  # set per dtype by solve(): the rounding noise allowed in the Armijo test
        self.relaxed = 0  # projections ended by a failed step but accepted (error < 10·tol), as published

    def _check(self) -> None:
        if self.cancel is not None:
            self.cancel.raise_if_cancelled()

    def _chi2_sweeps(self, K, u, v, r, log_r, log_c, log_rP, threshold):
        """Alternate row and column Sinkhorn updates until the χ² row error is at most ``threshold``."""
        sweeps = 0
        while True:
            rP = log_rP.exp()
            chi2 = float(((r - rP) ** 2 / rP).sum())
            if chi2 <= threshold:
                return u, v, log_rP
            if not math.isfinite(chi2) or sweeps >= self.max_sweeps:
                raise _ProjectionFailed(f"χ²-Sinkhorn did not reach {threshold:.2e} (χ² = {chi2:.2e}) in "
                                        f"{sweeps} sweeps")
            self._check()
            u = u + (log_r - log_rP)
            v = log_c - K.lse_cols(u)
            log_rP = u + K.lse_rows(v)
            sweeps += 1
            self.sinkhorn_sweeps += 1

    def _newton_direction(self, P, c, diag_q, g, rP, err, eta):
        """Δu with ‖(diag(r_P) − P diag(1/c) Pᵀ) Δu + g‖₁ ≤ η·err and −gᵀΔu > 0, by discounted PCG; (Δu, ok)."""
        target = eta * err

        def q_mul(x):  # P diag(1/c) Pᵀ x
            return P @ ((P.T @ x) / c)

        def fix(m):
            pos = m > 0
            return torch.where(pos, m, m[pos].min() if bool(pos.any()) else torch.ones_like(m))

        x0 = -g / fix(rP - diag_q)
        qx0 = q_mul(x0)
        best = x0
        best_norm = float((rP * x0 - qx0 + g).abs().sum())
        if best_norm <= target and float(-(g * x0).sum()) > 0:
            return best, True
        rho = self.rho
        used = 0
        while True:
            rho = 1.0 - (1.0 - rho) / 4.0
            M = fix(rP - rho * diag_q)
            x, qx = x0.clone(), qx0.clone()
            res = rP * x - rho * qx + g  # residual of the discounted system
            z = res / M
            p = -z
            rz = float((res * z).sum())
            while float(res.abs().sum()) > 0.25 * target:
                used += 1
                self.cg_iterations += 1
                self._check()
                qp = q_mul(p)
                Ap = rP * p - rho * qp
                curv = float((p * Ap).sum())
                if curv <= 0:  # negative curvature: keep the best iterate, reset the discount
                    self.rho = 0.0
                    return best, best_norm < err and float(-(g * best).sum()) > 0
                alpha = rz / curv
                x = x + alpha * p
                qx = qx + alpha * qp
                res = res + alpha * Ap
                true_norm = float((rP * x - qx + g).abs().sum())
                if true_norm < best_norm:
                    best, best_norm = x.clone(), true_norm
                if best_norm <= target and float(-(g * best).sum()) > 0:
                    self.rho = rho
                    return best, True
                if used >= self.max_cg:
                    self.rho = rho
                    return best, False
                z = res / M
                rz_new = float((res * z).sum())
                p = -z + (rz_new / rz) * p
                rz = rz_new
            # the discounted system is solved but the true one is not yet: discount less, restart from x0

    def project(self, K, log_r, log_c, tol, u, v):
        """Solve the dual at this γ to ‖r_P − r‖₁ ≤ tol; (u, v, deltas). Raises _ProjectionFailed."""
        r, c = log_r.exp(), log_c.exp()
        threshold = tol ** 0.4
        v = log_c - K.lse_cols(u)
        log_rP = u + K.lse_rows(v)
        u, v, log_rP = self._chi2_sweeps(K, u, v, r, log_r, log_c, log_rP, threshold)
        err = float((log_rP.exp() - r).abs().sum())
        deltas: list[float] = []
        steps = 0

        def give_up(why: str):
            """The published fallback: a failed step ends the projection, a success if err < 10·tol."""
            if err < 10.0 * tol:
                self.relaxed += 1
                return u, v, deltas
            raise _ProjectionFailed(why)

        while err > tol:
            self._check()
            if steps >= self.max_newton:
                return give_up(f"{steps} Newton steps without reaching {tol:.2e}")
            steps += 1
            rP = log_rP.exp()
            g = rP - r
            eta = min(max(err, 0.9 * tol / err), 0.9)
            P = K.plan(u, v)
            diag_q = K.row_sums_of_square(P, c)
            du, ok = self._newton_direction(P, c, diag_q, g, rP, err, eta)
            if not ok:
                return give_up("preconditioned CG did not reach its tolerance")
            dv = -(P.T @ du) / c
            del P
            self.rho = max(0.0, 1.0 - 4.0 * (1.0 - self.rho))
            decrease = float(-(g * du).sum())
            if not decrease > 0:
                return give_up("the Newton direction is not a descent direction")
            alpha = 1.0
            while True:
                log_cP = (v + alpha * dv) + K.lse_cols(u + alpha * du)
                self.line_search_evals += 1
                if float(log_cP.exp().sum()) - 1.0 <= 0.99 * alpha * decrease + self.roundoff:
                    break
                alpha *= 0.5
                if alpha < 1e-9:
                    break
                self._check()
            if alpha < 1e-9:
                return give_up("the line search found no sufficient decrease")
            u = u + alpha * du
            v = v + alpha * dv
            err_before = float((c - log_cP.exp()).abs().sum() + (r - (u + K.lse_rows(v)).exp()).abs().sum())
            v = v + (log_c - log_cP)
            log_rP = u + K.lse_rows(v)
            u, v, log_rP = self._chi2_sweeps(K, u, v, r, log_r, log_c, log_rP, threshold)
            new_err = float((log_rP.exp() - r).abs().sum())
            deltas.append((err - err_before) / ((1.0 - eta) * err))
            err = new_err
            self.newton_steps += 1
            self.on_newton(u, v)
        u = u + (log_r - log_rP)
        if not (torch.isfinite(u).all() and torch.isfinite(v).all()):
            raise _ProjectionFailed("the dual potentials are no longer finite")
        return u, v, deltas


# --- the solver --------------------------------------------------------------------------------------------------


def _as_tensor(x: Any, dtype: torch.dtype, device: torch.device, name: str) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        t = x.detach().to(device=device, dtype=dtype)
    else:
        t = torch.as_tensor(np.asarray(x, dtype=np.float64), dtype=dtype, device=device)
    if not bool(torch.isfinite(t).all()):
        raise InputError(f"{name} has values that are not finite (NaN or infinite).")
    return t


def solve(a: Any, b: Any, C: Any, gamma: float = 2.0**12, *, gamma_init: float = 16.0, p: float = 1.5,
          q: float = 2.0, tol: float | None = None, device: str | torch.device | None = None,
          dtype: torch.dtype = torch.float64, progress: Callable[[TNTStep], None] | None = None,
          cancel: _Cancellable | None = None, limit_bytes: int | None = None, track_cost: bool = True,
          return_plan: bool = True, max_cg: int = 5000, max_sweeps: int = 20000, max_newton: int = 500) -> TNTResult:
    """Entropic OT by MDOT-TNT: the plan of min ⟨P, C⟩ − H(P)/γ over U(a, b), rounded onto U(a, b).

    Args:
        a, b: histograms (n,), (m,): non-negative, equal positive mass (numpy, torch or lists).
        C: cost (n, m); the schedule assumes C ∈ [0, 1] (see ``problems.cost_matrix``), so γ is relative to that.
        gamma: the final inverse regularisation γ_f = 1/ε (POT's ``reg`` = 1/γ); a relative cost gap of
            roughly log(n)/γ or better is what it buys.
        gamma_init, p, q: the published schedule (start 16, tolerance H_min/γ^p, first factor 2).
        tol: optional tighter marginal tolerance for the last γ (see the module's deviations).
        device: where to compute (default: C's device if C is a tensor, else CPU); dtype: float64 by default
            (float32 underflows at large γ). A cost given as a float32 tensor is kept in float32 (half its memory)
            while the arithmetic stays in ``dtype``.
        progress: called with a :class:`TNTStep` after each Newton step and each annealing step.
        cancel: an object with ``raise_if_cancelled()`` (``backends.common.progress.CancelToken``); checked
            between steps, so a Stop ends the solve at the next step with ``Cancelled``.
        limit_bytes: memory the dense working arrays (the cost and one plan, :data:`WORKING_COPIES`) may take
            (default: half the free memory of the device);
            more is refused with :class:`~backends.ot.problems.ProblemTooLarge` naming the largest n that fits.
        track_cost: compute the rounded plan's cost at every step for the history (costs a few n² operations).
        return_plan: keep the dense rounded plan in the result (else ``plan`` is None; the cost is still given).
    """
    t0 = time.perf_counter()
    if device is None:
        device = C.device if isinstance(C, torch.Tensor) else "cpu"
    device = torch.device(device)
    if not (isinstance(gamma, (int, float)) and math.isfinite(gamma) and gamma > 0):
        raise InputError(f"γ (1/ε) must be a positive number (got {gamma!r}); ε = 1/γ must be > 0.")
    if tol is not None and not (math.isfinite(tol) and tol > 0):
        raise InputError(f"The marginal tolerance must be a positive number (got {tol!r}).")
    shape = tuple(C.shape) if hasattr(C, "shape") else np.shape(C)
    if len(shape) != 2:
        raise InputError(f"The cost must be a matrix (n × m); got shape {shape}.")
    n, m = int(shape[0]), int(shape[1])
    # a float32 cost stays float32 (half the memory; see .dense); the arithmetic is in ``dtype``
    cost_dtype = torch.float32 if (isinstance(C, torch.Tensor) and C.dtype == torch.float32) else dtype
    check_solver_fits(n, m, cost_dtype, dtype, limit_bytes=limit_bytes, device=device)
    Ct = _as_tensor(C, cost_dtype, device, "The cost")
    a_t = _as_tensor(a, dtype, device, "The first histogram").reshape(-1)
    b_t = _as_tensor(b, dtype, device, "The second histogram").reshape(-1)
    if a_t.numel() != n or b_t.numel() != m:
        raise InputError(f"The histograms have {a_t.numel()} and {b_t.numel()} entries, the cost is {n} × {m}.")
    if bool((a_t < 0).any()) or bool((b_t < 0).any()):
        raise InputError("The histograms must be non-negative (a density has no negative mass).")
    mass_a, mass_b = float(a_t.sum()), float(b_t.sum())
    if mass_a <= 0 or mass_b <= 0:
        raise InputError("A histogram has zero total mass: there is nothing to transport.")
    if abs(mass_a - mass_b) > 1e-9 * max(mass_a, mass_b):
        raise InputError(f"The histograms must have the same total mass (got {mass_a:.6g} and {mass_b:.6g}); "
                         "normalize them to sum to 1.")
    r, c = a_t / mass_a, b_t / mass_b
    gamma_f = float(gamma)
    h_min = max(min(_entropy(r), _entropy(c)), 1e-2)

    def eps_of(g: float, last: bool) -> float:
        eps = h_min / g**p
        return min(eps, 2.0 * tol) if (last and tol is not None) else eps

    history: list[HistoryEntry] = []
    state = {"gamma": min(gamma_init, gamma_f), "anneal": 0, "measuring": 0.0}
    K = BlockedCost(Ct, dtype)

    def observe(u: torch.Tensor, v: torch.Tensor, kind: str) -> None:
        """Record a history point; its own cost (a plan, its rounding) is left out of the times it records."""
        start = time.perf_counter()
        now = start - t0 - state["measuring"]
        P = K.plan(u, v)
        err = marginal_error(P, r, c)
        cost = K.dot(round_to_polytope(P, r, c, inplace=True)) * mass_a if track_cost else None
        del P
        state["measuring"] += time.perf_counter() - start
        g = state["gamma"]
        history.append(HistoryEntry(now, err, cost, g, kind))
        if progress is not None:
            progress(TNTStep(kind, g, gamma_f, now, err, cost, projector.newton_steps, state["anneal"],
                             min(gamma_init, gamma_f)))

    projector = _Projector(cancel, lambda u_, v_: observe(u_, v_, "newton"), max_cg, max_sweeps, max_newton)
    projector.roundoff = 100.0 * torch.finfo(dtype).eps
    gam = state["gamma"]
    gammas = [0.0, gam]
    u_cur = v_cur = None
    u_init = v_init = None
    converged, message = True, "reached γ_f"
    while True:
        if cancel is not None:
            cancel.raise_if_cancelled()
        last = abs(gam - gamma_f) <= 1e-9 * gamma_f
        eps = eps_of(gam, last)
        s = min(eps / 2.0, 1.0)
        r_hat = (1 - 0.9 * s) * r + 0.9 * s / n
        c_hat = (1 - 0.1 * s) * c + 0.1 * s / m
        if u_init is None:
            u_init, v_init = r_hat.log(), c_hat.log()
            u_cur, v_cur = u_init, v_init
        u_prev, v_prev = u_cur, v_cur
        K.gamma = gam
        state["gamma"] = gam
        try:
            u_cur, v_cur, deltas = projector.project(K, r_hat.log(), c_hat.log(), eps / 2.0, u_init, v_init)
        except _ProjectionFailed as exc:
            converged = False
            if gammas[-2] > 0:
                message = (f"stopped at γ = {gammas[-2]:.4g} of {gamma_f:.4g}: the projection at γ = {gam:.4g} "
                           f"failed ({exc})")
                gam = gammas[-2]
            else:
                message = (f"stopped before γ = {gam:.4g} of {gamma_f:.4g}: the first projection failed ({exc}); "
                           "the plan is the rounded starting point")
            u_cur, v_cur = u_prev, v_prev
            break
        state["anneal"] += 1
        observe(u_cur, v_cur, "anneal")
        if last:
            break
        dmin = min(deltas + [1.0])
        if dmin < 0.5:
            q = q**0.5
        elif dmin > 0.9:
            q = q**2
        new_gam = min(gam * q, gamma_f)
        scale = (new_gam - gammas[-1]) / (gammas[-1] - gammas[-2])
        u_init = u_cur + (u_cur - u_prev) * scale
        v_init = v_cur + (v_cur - v_prev) * scale
        gammas.append(new_gam)
        gam = new_gam
    K.gamma = gam
    plan = K.plan(u_cur, v_cur)
    err = marginal_error(plan, r, c)
    round_to_polytope(plan, r, c, inplace=True)
    plan_err = marginal_error(plan, r, c)
    cost = K.dot(plan) * mass_a
    plan = plan.mul_(mass_a) if return_plan else None
    log_mass = math.log(mass_a)
    return TNTResult(
        plan=plan, cost=cost, u=u_cur + log_mass, v=v_cur, gamma=gam, gamma_target=gamma_f,
        marginal_error=err, plan_marginal_error=plan_err, converged=converged, message=message,
        iterations={"annealing_steps": state["anneal"], "newton_steps": projector.newton_steps,
                    "cg_iterations": projector.cg_iterations, "sinkhorn_sweeps": projector.sinkhorn_sweeps,
                    "line_search_evaluations": projector.line_search_evals,
                    "relaxed_projections": projector.relaxed},
        history=history, seconds=time.perf_counter() - t0, device=str(device), dtype=str(dtype).replace("torch.", ""),
        measuring_seconds=state["measuring"], cost_dtype=str(cost_dtype).replace("torch.", ""),
    )
