"""The Optimal Transport capability's work, shared by the tab, the API, the CLI and the tests.

``colour_transfer``, ``densities``, ``point_clouds`` and ``convergence`` are long work (``backends.common.progress``): they yield a
:class:`ProgressEvent` per Newton / annealing step of the solver (per traced point in the comparison) and then a
typed result. The solver runs on a worker thread (``stream_reports``) and checks the run's token at every step,
so a Stop ends it within one O(n²) operation or so.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from backends.common.errors import InputError
from backends.common.progress import CancelToken, ProgressEvent, relay, stream_reports

from .advice import advice
from .requests import ColourTransferRequest, ConvergenceRequest, DensityRequest, PointCloudRequest


def _device() -> str:
    from backends.common.device import select_device

    device = select_device(None)
    return "cuda" if device.type == "cuda" else "cpu"  # the solver is torch: CUDA or CPU (float64 everywhere)


def _solve_streamed(a, b, C, epsilon: float, cancel: CancelToken | None, start: float, end: float, what: str):
    """MDOT-TNT on (a, b, C) as events (a fraction over [start, end] in log γ) and then its :class:`TNTResult`."""
    from .solver import solve

    if not epsilon > 0:
        raise InputError(f"ε must be > 0 (got {epsilon}); ε = 0 is exact OT (use the convergence section's EMD).")

    def work(report):
        def progress(step):
            report(ProgressEvent(start + (end - start) * step.fraction, f"{what}: {step.message}"))

        return solve(a, b, C, gamma=1.0 / epsilon, progress=progress, cancel=report.cancel, device=C.device)

    return (yield from relay(stream_reports(work, cancel)))


# --- colour transfer ----------------------------------------------------------------------------------------------


@dataclass
class ColourTransferResult:
    source: np.ndarray  # the (resized) photo, uint8
    reference: np.ndarray
    result: np.ndarray
    source_colours: np.ndarray  # (k, 3) in [0, 1]
    source_weights: np.ndarray
    reference_colours: np.ndarray
    reference_weights: np.ndarray
    plan: np.ndarray  # (k, k'), sums to 1
    f: np.ndarray  # dual potentials in cost units
    g: np.ndarray
    cost: float  # ⟨plan, C⟩ with C the squared RGB distance scaled to [0, 1]
    cost_rgb: float  # the same in squared RGB units ([0, 1] per channel)
    info: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"cost": self.cost, "cost_rgb": self.cost_rgb, "colours": [len(self.source_weights),
                                                                          len(self.reference_weights)], **self.info}


def colour_transfer(request: ColourTransferRequest, cancel: CancelToken | None = None
                    ) -> Iterator[ProgressEvent | ColourTransferResult]:
    import torch

    from backends.common.imageio import to_rgb_array

    from .colours import palette, photo_pixels, recolour
    from .problems import cost_matrix

    started = time.perf_counter()
    source = to_rgb_array(request.source, max_side=request.max_side)
    reference = to_rgb_array(request.reference, max_side=request.max_side)
    yield ProgressEvent(0.02, "k-means palettes")
    rng = np.random.default_rng(request.seed)
    xs, wa, labels = palette(photo_pixels(source), request.colours, rng)
    ys, wb, _ = palette(photo_pixels(reference), request.colours, rng)
    if cancel is not None:
        cancel.raise_if_cancelled()
    device = _device()
    C_raw = cost_matrix(xs, ys, "sqeuclidean", normalize=False, device=device)
    scale = float(C_raw.max()) or 1.0
    C = C_raw / scale
    yield ProgressEvent(0.1, f"solving {len(wa)} × {len(wb)} colours on {device}")
    res = yield from _solve_streamed(torch.as_tensor(wa), torch.as_tensor(wb), C, request.epsilon, cancel, 0.1, 0.95,
                                     "colours")
    plan = res.plan.cpu().numpy()
    f, g = (t.cpu().numpy() for t in res.potentials)
    out = recolour(source, labels, xs, plan, ys)
    info = {"device": res.device, "dtype": res.dtype, "gamma": res.gamma, "epsilon": request.epsilon,
            "converged": res.converged, "message": res.message, "marginal_error": res.marginal_error,
            "plan_marginal_error": res.plan_marginal_error, "iterations": res.iterations,
            "solve_seconds": round(res.seconds, 3), "seconds": round(time.perf_counter() - started, 3),
            "source_size": list(source.shape[:2]), "reference_size": list(reference.shape[:2]),
            "advice": advice(len(wa), request.epsilon, res.device)}
    yield ColourTransferResult(source, reference, out, xs, wa, ys, wb, plan, f, g, res.cost, res.cost * scale, info)


# --- images as densities ------------------------------------------------------------------------------------------


@dataclass
class DensityResult:
    a: np.ndarray  # m×m densities, sum 1
    b: np.ndarray
    plan: np.ndarray  # (m², m²)
    f: np.ndarray
    g: np.ndarray
    frames: np.ndarray  # (frames, m, m) displacement interpolation, t = 0 … 1
    cost: float
    info: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"cost": self.cost, "n": int(self.a.size), "frames": len(self.frames), **self.info}


def densities(request: DensityRequest, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | DensityResult]:
    import torch

    from .densities import as_density, interpolate
    from .problems import check_solver_fits, density, grid_cost

    started = time.perf_counter()
    m = request.side
    device = _device()
    check_solver_fits(m * m, m * m, device=device)  # before any work
    notes: list[str] = []
    if request.source is None:
        a = density(request.class_a, m, request.seed)
    else:
        a, said = as_density(request.source, m, request.mass_where, "first image")
        notes += said
    if request.target is None:
        b = density(request.class_b, m, request.seed + 1)
    else:
        b, said = as_density(request.target, m, request.mass_where, "second image")
        notes += said
    C = grid_cost(m, request.cost, device=device)
    yield ProgressEvent(0.02, f"solving n = {m * m} on {device}")
    res = yield from _solve_streamed(torch.as_tensor(a.ravel(), device=device),
                                     torch.as_tensor(b.ravel(), device=device), C, request.epsilon, cancel, 0.02,
                                     0.9, "densities")
    plan = res.plan.cpu().numpy()
    frames = []
    for k, t in enumerate(np.linspace(0.0, 1.0, request.frames)):
        if cancel is not None:
            cancel.raise_if_cancelled()
        frames.append(interpolate(plan, m, float(t)))
        yield ProgressEvent(0.9 + 0.1 * (k + 1) / request.frames, f"interpolation frame {k + 1}/{request.frames}")
    f, g = (t.cpu().numpy() for t in res.potentials)
    info = {"device": res.device, "dtype": res.dtype, "gamma": res.gamma, "epsilon": request.epsilon,
            "cost_name": request.cost, "converged": res.converged, "message": res.message,
            "marginal_error": res.marginal_error, "plan_marginal_error": res.plan_marginal_error,
            "iterations": res.iterations, "solve_seconds": round(res.seconds, 3),
            "seconds": round(time.perf_counter() - started, 3), "notes": notes,
            "advice": advice(m * m, request.epsilon, res.device)}
    yield DensityResult(a, b, plan, f, g, np.stack(frames), res.cost, info)


# --- convergence ---------------------------------------------------------------------------------------------------


@dataclass
class ConvergenceResult:
    exact_cost: float
    runs: list[dict]  # MethodRun.to_json(exact) per method
    info: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"exact_cost": self.exact_cost, "methods": [{k: v for k, v in r.items() if k != "trace"}
                                                          for r in self.runs], **self.info}


def convergence(request: ConvergenceRequest, cancel: CancelToken | None = None
                ) -> Iterator[ProgressEvent | ConvergenceResult]:
    from .methods import METHODS, exact_cost, relative_gap, run_method
    from .problems import grid_problem

    m = request.side
    problem = grid_problem(m, request.class_a, request.class_b, request.seed, request.cost)
    exact = exact_cost(problem.a, problem.b, problem.C, cancel=cancel)
    runs = []
    for k, method in enumerate(METHODS):
        lo, hi = k / len(METHODS), (k + 1) / len(METHODS)

        def work(report, method=method, lo=lo, hi=hi):
            def on_point(name, p):
                report(ProgressEvent(lo + (hi - lo) * 0.5, f"{name}: {p.seconds:.2f} s, marginal error "
                                                           f"{p.marginal_error:.1e}, cost gap "
                                                           f"{relative_gap(p.cost, exact):.1e}"))

            return run_method(method, problem.a, problem.b, problem.C, request.epsilon, budget=request.budget,
                              cancel=report.cancel, on_point=on_point)

        yield ProgressEvent(lo, f"{method}: starting")
        run = yield from relay(stream_reports(work, cancel))
        runs.append(run.to_json(exact))
    info = {"n": m * m, "epsilon": request.epsilon, "gamma": 1.0 / request.epsilon, "cost_name": request.cost,
            "classes": [request.class_a, request.class_b], "seed": request.seed, "budget": request.budget,
            "device": "cpu", "advice": advice(m * m, request.epsilon, "cpu")}
    yield ConvergenceResult(exact, runs, info)


# --- point clouds --------------------------------------------------------------------------------------------------


@dataclass
class CloudResult:
    x: np.ndarray  # (n, d) first cloud
    y: np.ndarray  # (m, d)
    wa: np.ndarray  # (n,) weights, sum 1
    wb: np.ndarray
    plan: np.ndarray  # (n, m) MDOT-TNT's rounded plan, sums to 1
    f: np.ndarray  # dual potentials in (scaled) cost units
    g: np.ndarray
    cost: float  # ⟨plan, C⟩, C scaled to [0, 1]
    exact_cost: float  # exact EMD's, the same scale
    info: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"cost": self.cost, "exact_cost": self.exact_cost, "points": [len(self.wa), len(self.wb)],
                **self.info}


def _cloud(value, weights_column: bool, kind: str, n: int, seed: int, name: str):
    from .clouds import as_cloud
    from .problems import point_cloud

    if value is None:
        return point_cloud(kind, n, seed, 2), np.full(n, 1.0 / n), f"generated {kind} ({n} points)"
    points, weights = as_cloud(value, weights_column, name)
    return points, weights, f"{name}: {len(weights)} points in {points.shape[1]}-D" + (
        ", weighted" if weights_column else ", uniform weights")


def point_clouds(request: PointCloudRequest, cancel: CancelToken | None = None
                 ) -> Iterator[ProgressEvent | CloudResult]:
    """MDOT-TNT between two point clouds at the request's ε, and exact EMD (POT's ``ot.emd``) beside it."""
    import torch

    from .methods import relative_gap
    from .problems import check_dense_fits, cost_matrix

    started = time.perf_counter()
    x, wa, said_a = _cloud(request.source, request.weights_column, request.kind_a, request.n, request.seed,
                           "first point set")
    y, wb, said_b = _cloud(request.target, request.weights_column, request.kind_b, request.n, request.seed + 1,
                           "second point set")
    if x.shape[1] != y.shape[1]:
        raise InputError(f"The point sets have different dimensions ({x.shape[1]}-D and {y.shape[1]}-D): both must be "
                         "2-D or both 3-D.")
    device = _device()
    # the cost, MDOT-TNT's plan, and exact EMD (its plan and its network simplex's arc arrays: ~48 bytes per entry
    # measured at n = 96²): about 8 float64 n × m arrays in all
    check_dense_fits(len(wa), len(wb), torch.float64, device=device, copies=8)
    C_raw = cost_matrix(x, y, request.cost, normalize=False, device=device)
    scale = float(C_raw.max()) or 1.0
    C = C_raw.div_(scale)
    yield ProgressEvent(0.02, f"solving {len(wa)} × {len(wb)} points on {device}")
    res = yield from _solve_streamed(torch.as_tensor(wa, device=device), torch.as_tensor(wb, device=device), C,
                                     request.epsilon, cancel, 0.02, 0.85, "point clouds")
    plan = res.plan.cpu().numpy()
    f, g = (t.cpu().numpy() for t in res.potentials)
    yield ProgressEvent(0.86, "exact EMD (POT's network simplex)")
    from .exact import emd

    exact_result = emd(wa, wb, C.cpu().numpy(), cancel=cancel, num_iter_max=10**8, want_plan=False)
    exact, emd_seconds = exact_result.cost, exact_result.seconds
    if cancel is not None:
        cancel.raise_if_cancelled()
    info = {"device": res.device, "dtype": res.dtype, "gamma": res.gamma, "epsilon": request.epsilon,
            "cost_name": request.cost, "cost_scale": scale, "cost_units": res.cost * scale,
            "exact_cost_units": exact * scale, "relative_gap": relative_gap(res.cost, exact),
            "converged": res.converged, "message": res.message, "marginal_error": res.marginal_error,
            "plan_marginal_error": res.plan_marginal_error, "iterations": res.iterations,
            "solve_seconds": round(res.seconds, 3), "emd_seconds": round(emd_seconds, 3),
            "seconds": round(time.perf_counter() - started, 3), "dimension": int(x.shape[1]),
            "inputs": [said_a, said_b], "links": request.links, "advice": advice(max(len(wa), len(wb)), request.epsilon, res.device)}
    yield ProgressEvent(1.0, "done")
    yield CloudResult(x, y, wa, wb, plan, f, g, res.cost, exact, info)
