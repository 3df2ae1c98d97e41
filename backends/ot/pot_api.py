"""The suite's MDOT-TNT solver in POT's conventions, so a POT user swaps it in.

``tnt(a, b, M, reg)`` takes what ``ot.solve(M, a, b, reg=reg)`` takes (histograms ``a``, ``b`` — empty or None
for uniform —, the cost ``M`` and the entropic weight ``reg`` = 1/γ) and returns the same kind of object,
an ``ot.utils.OTResult``: ``plan`` (rounded onto U(a, b), so exactly feasible — POT's Sinkhorn plan is not),
``value_linear`` = ⟨plan, M⟩, ``value`` = value_linear + reg·KL(plan ‖ a bᵀ) (``reg_type="KL"``, POT's default)
or + reg·Σ plan log plan (``"entropy"``), ``potentials`` = (log_u, log_v) as POT's entropic ``ot.solve``
returns them (P_ij = exp(log_u_i + log_v_j − M_ij / reg), before rounding), ``status`` and ``log``.
Arrays come back in the inputs' backend (numpy in, numpy out; torch in, torch out on the same device).

``tnt_plan(a, b, M, reg, log=False)`` is the ``ot.sinkhorn``-shaped variant: the plan, or (plan, log).

Note on ``reg``: MDOT-TNT's schedule assumes M scaled to [0, 1]; with another scale, reg is relative to it
(divide M by its maximum and reg by the same number to keep the same problem).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from backends.common.errors import InputError

from .solver import solve


def _backend(*arrays):
    import ot

    return ot.backend.get_backend(*[x for x in arrays if x is not None and not _empty(x)])


def _empty(x) -> bool:
    return hasattr(x, "shape") and len(x.shape) == 1 and x.shape[0] == 0 or (isinstance(x, list) and not x)


def _to_torch(x, nx, dtype, device):
    if isinstance(x, torch.Tensor):
        return x.detach().to(dtype=dtype, device=device)
    return torch.as_tensor(np.asarray(nx.to_numpy(x), dtype=np.float64), dtype=dtype, device=device)


def _from_torch(t: torch.Tensor, like, nx):
    if isinstance(like, torch.Tensor):
        return t.to(dtype=like.dtype, device=like.device)
    return nx.from_numpy(t.detach().cpu().numpy(), type_as=like)


def tnt(a: Any, b: Any, M: Any, reg: float, *, reg_type: str = "KL", tol: float | None = None,
        dtype: torch.dtype = torch.float64, device: str | torch.device | None = None, verbose: bool = False,
        **solver_kwargs):
    """Entropic OT by MDOT-TNT with POT's arguments; an ``ot.utils.OTResult`` (see the module's doc).

    Args:
        a, b: source / target weights (n,), (m,); None or empty for uniform.
        M: cost matrix (n, m), ideally scaled to [0, 1].
        reg: entropic regularisation ε > 0 (POT's ``reg``); MDOT-TNT anneals γ from 16 up to 1/reg.
        reg_type: "KL" (POT's default, value adds reg·KL(plan ‖ a bᵀ)) or "entropy" (adds reg·Σ plan log plan).
        tol: optional marginal tolerance for the last γ (as ``backends.ot.solver.solve``'s ``tol``).
        dtype, device: where and in what precision to compute (default float64 on M's device).
        verbose: print each Newton / annealing step.
        **solver_kwargs: passed to ``backends.ot.solver.solve`` (``progress``, ``cancel``, ``limit_bytes`` ...).
    """
    from ot.utils import OTResult

    if reg is None or not np.isfinite(reg) or reg <= 0:
        raise InputError(f"reg (ε) must be > 0 for the entropic solver (got {reg!r}); use ot.emd for reg = 0.")
    if reg_type.lower() not in ("kl", "entropy"):
        raise InputError(f"reg_type must be 'KL' or 'entropy' (got {reg_type!r}).")
    nx = _backend(a, b, M)
    if device is None:
        device = M.device if isinstance(M, torch.Tensor) else "cpu"
    Mt = _to_torch(M, nx, dtype, device)
    n, m = Mt.shape
    at = torch.full((n,), 1.0 / n, dtype=dtype, device=device) if a is None or _empty(a) else _to_torch(a, nx, dtype, device)
    bt = torch.full((m,), 1.0 / m, dtype=dtype, device=device) if b is None or _empty(b) else _to_torch(b, nx, dtype, device)
    if verbose and "progress" not in solver_kwargs:
        solver_kwargs["progress"] = lambda step: print(step.message)
    res = solve(at, bt, Mt, gamma=1.0 / float(reg), tol=tol, device=device, dtype=dtype, **solver_kwargs)
    plan = res.plan
    value_linear = float((plan * Mt).sum())
    if reg_type.lower() == "entropy":
        reg_term = float(torch.special.xlogy(plan, plan).sum())
    else:
        ref = at[:, None] * bt[None, :]
        reg_term = float(torch.where(plan > 0, plan * torch.log(plan / torch.where(ref > 0, ref, 1.0) + 1e-16),
                                     torch.zeros_like(plan)).sum())
    like = M
    log = {"gamma": res.gamma, "gamma_target": res.gamma_target, "marginal_error": res.marginal_error,
           "plan_marginal_error": res.plan_marginal_error, "iterations": res.iterations, "seconds": res.seconds,
           "message": res.message, "history": res.history}
    return OTResult(
        potentials=(_from_torch(res.u, like, nx), _from_torch(res.v, like, nx)),
        value=value_linear + float(reg) * reg_term,
        value_linear=value_linear,
        plan=_from_torch(plan, like, nx),
        log=log,
        backend=nx,
        status="converged" if res.converged else res.message,
    )


def tnt_plan(a: Any, b: Any, M: Any, reg: float, log: bool = False, **kwargs):
    """``ot.sinkhorn``-shaped: the (rounded) plan, or (plan, log) with log holding ``log_u``, ``log_v``."""
    result = tnt(a, b, M, reg, **kwargs)
    if not log:
        return result.plan
    info = dict(result.log)
    info["log_u"], info["log_v"] = result.potentials
    return result.plan, info
