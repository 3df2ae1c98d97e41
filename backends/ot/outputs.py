"""Raw outputs of the OT actions, written the same way by the tab and the CLI (``Action.write_run`` adds run.json).

* ``plan.npz``: the plan as a SciPy sparse matrix (``scipy.sparse.load_npz``); entries under 1e-12 of the mass
  are left out (a rounded entropic plan is dense; the left-out mass is in the run card as ``plan_dropped_mass``).
* ``potentials.npz``: ``f``, ``g`` (dual potentials in cost units: P_ij ≈ exp((f_i + g_j − C_ij)/ε)), and the
  colours / densities / points the plan is between.
* point clouds also as ``source.csv`` / ``target.csv`` (coordinates, weight: they load back as inputs with
  *Last column is a weight*) and ``clouds.png`` (the plot).
* pictures as PNG; the interpolation also as ``interpolation.npy`` (frames × m × m densities);
  the comparison as ``convergence.json`` (every traced point) and ``convergence.png`` (the plot).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from backends.common.files import write_text
from backends.common.imageio import save_png

from .densities import PLAN_FLOOR, to_grey_image


def save_sparse_plan(plan: np.ndarray, path: Path) -> float:
    """The plan as a sparse .npz; returns the mass left out (entries under 1e-12 of the total)."""
    import scipy.sparse as sp

    keep = plan > PLAN_FLOOR * plan.sum()
    sp.save_npz(path, sp.csr_matrix(np.where(keep, plan, 0.0)), compressed=True)
    return float(plan[~keep].sum())


def write_colour_files(result, folder: Path) -> dict[str, Path]:
    from .colours import palette_strip

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"result": save_png(result.result, folder / "result.png"),
             "source": save_png(result.source, folder / "source.png"),
             "reference": save_png(result.reference, folder / "reference.png"),
             "palettes": save_png(np.concatenate([palette_strip(result.source_colours, result.source_weights),
                                                  palette_strip(result.reference_colours, result.reference_weights)]),
                                  folder / "palettes.png")}
    result.info["plan_dropped_mass"] = save_sparse_plan(result.plan, folder / "plan.npz")
    paths["plan"] = folder / "plan.npz"
    np.savez_compressed(folder / "potentials.npz", f=result.f, g=result.g, source_colours=result.source_colours,
                        source_weights=result.source_weights, reference_colours=result.reference_colours,
                        reference_weights=result.reference_weights)
    paths["potentials"] = folder / "potentials.npz"
    return paths


def write_density_files(result, folder: Path) -> dict[str, Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    top = float(max(result.a.max(), result.b.max(), result.frames.max()))
    paths = {"density_a": save_png(to_grey_image(result.a), folder / "density_a.png"),
             "density_b": save_png(to_grey_image(result.b), folder / "density_b.png")}
    for k, frame in enumerate(result.frames):
        paths[f"frame_{k:02d}"] = save_png(to_grey_image(frame, top), folder / f"frame_{k:02d}.png")
    np.save(folder / "interpolation.npy", result.frames)
    paths["interpolation"] = folder / "interpolation.npy"
    result.info["plan_dropped_mass"] = save_sparse_plan(result.plan, folder / "plan.npz")
    paths["plan"] = folder / "plan.npz"
    np.savez_compressed(folder / "potentials.npz", f=result.f, g=result.g, a=result.a, b=result.b)
    paths["potentials"] = folder / "potentials.npz"
    return paths


def _write_points(path: Path, points: np.ndarray, weights: np.ndarray) -> Path:
    names = ["x", "y", "z"][: points.shape[1]] + ["weight"]
    rows = np.column_stack([points, weights])
    write_text(path, ",".join(names) + "\n" + "\n".join(",".join(repr(float(v)) for v in r) for r in rows) + "\n")
    return path


def write_cloud_files(result, folder: Path, links: int = 300) -> dict[str, Path]:
    from .clouds import cloud_figure

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    result.info["plan_dropped_mass"] = save_sparse_plan(result.plan, folder / "plan.npz")
    paths = {"plan": folder / "plan.npz"}
    np.savez_compressed(folder / "potentials.npz", f=result.f, g=result.g, x=result.x, y=result.y, wa=result.wa,
                        wb=result.wb)
    paths["potentials"] = folder / "potentials.npz"
    paths["source_points"] = _write_points(folder / "source.csv", result.x, result.wa)
    paths["target_points"] = _write_points(folder / "target.csv", result.y, result.wb)
    fig = cloud_figure(result, result.info.get("links", links))
    fig.savefig(folder / "clouds.png", dpi=100)
    paths["plot"] = folder / "clouds.png"
    return paths


def convergence_figure(result):
    """Marginal error and relative cost gap against solver time, log scales, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from .methods import relative_gap

    fig = Figure(figsize=(10, 4), layout="constrained")
    ax_err, ax_gap = fig.subplots(1, 2)
    for run in result.runs:
        trace = run["trace"]
        if not trace:
            continue
        t = [max(p[0], 1e-4) for p in trace]
        err = [max(p[1], 1e-17) for p in trace]
        gap = [max(relative_gap(p[2], result.exact_cost), 1e-17) for p in trace]
        style = {"marker": "o" if len(trace) == 1 else ".", "label": run["label"]}
        ax_err.plot(t, err, **style)
        ax_gap.plot(t, gap, **style)
    for ax, what in ((ax_err, "marginal error ‖P1 − a‖₁ + ‖Pᵀ1 − b‖₁"), (ax_gap, "relative cost gap to exact")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("solver time (s)")
        ax.set_ylabel(what)
        ax.grid(True, which="major", alpha=0.3)
    ax_gap.legend(fontsize=8)
    info = result.info
    fig.suptitle(f"\nn = {info['n']}, ε = {info['epsilon']:.3g} ({info['cost_name']}), exact cost "
                 f"{result.exact_cost:.4g}")
    return fig


def write_convergence_files(result, folder: Path) -> dict[str, Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_text(folder / "convergence.json", json.dumps({"exact_cost": result.exact_cost, "runs": result.runs,
                                                        **result.info}, indent=1))
    fig = convergence_figure(result)
    fig.savefig(folder / "convergence.png", dpi=100)
    return {"convergence": folder / "convergence.json", "plot": folder / "convergence.png"}
