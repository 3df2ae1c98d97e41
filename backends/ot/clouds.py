"""Point clouds for the OT tab: reading a user's points (.npy / .csv, n × d or n × (d + 1) with weights) and the
picture of a plan between two clouds (its strongest couplings as segments).

A cloud is (points (n, d), weights (n,) summing to 1); d is 2 or 3. The .csv files written with a result
(``source.csv`` / ``target.csv``: coordinates and a weight column) load back as inputs with *Last column is a weight*.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from backends.common.errors import InputError

from .requests import MAX_CLOUD_POINTS


def read_points(path: str | Path) -> np.ndarray:
    """A .npy (2-D numeric array) or .csv (comma-separated numbers, an optional header line) as a float array."""
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            arr = np.load(path, allow_pickle=False)
        elif suffix in (".csv", ".txt"):
            text = path.read_text(encoding="utf-8", errors="strict")
            lines = [ln for ln in text.splitlines() if ln.strip()]
            if lines and not _numeric(lines[0]):
                lines = lines[1:]  # a header
            arr = np.loadtxt(lines, delimiter=",", ndmin=2) if lines else np.zeros((0, 0))
        else:
            raise InputError(f"{path.name}: a point cloud is a .npy or .csv file (got '{suffix or 'no extension'}').")
    except InputError:
        raise
    except (ValueError, UnicodeDecodeError, OSError) as e:
        raise InputError(f"{path.name} could not be read as numbers ({type(e).__name__}: {str(e)[:120]}): a point "
                         "cloud is a .npy array or a .csv of comma-separated numbers, one point a line.") from None
    if arr.dtype.kind not in "fiu":
        raise InputError(f"{path.name}: the array holds {arr.dtype} values, not numbers.")
    return np.asarray(arr, dtype=np.float64)


def _numeric(line: str) -> bool:
    try:
        [float(v) for v in line.split(",")]
    except ValueError:
        return False
    return True


def as_cloud(value, weights_column: bool, name: str) -> tuple[np.ndarray, np.ndarray]:
    """An (n, d) or (n, d + 1) array (or a path to one) → (points (n, d), weights summing to 1), checked."""
    arr = read_points(value) if isinstance(value, (str, Path)) else np.asarray(value)
    if arr.dtype.kind not in "fiu":
        raise InputError(f"The {name} is not an array of numbers.")
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim != 2:
        raise InputError(f"The {name} must be a table of points, n rows × d columns (got shape {arr.shape}).")
    if not np.all(np.isfinite(arr)):
        bad = int((~np.isfinite(arr)).any(1).sum())
        raise InputError(f"The {name} has {bad} row(s) with NaN or infinite values; remove them.")
    cols = arr.shape[1] - (1 if weights_column else 0)
    if cols not in (2, 3):
        want = "3 or 4 columns (x, y[, z], weight)" if weights_column else "2 or 3 columns (x, y[, z])"
        raise InputError(f"The {name} has {arr.shape[1]} column(s); a point cloud here has {want}.")
    n = arr.shape[0]
    if n < 2:
        raise InputError(f"The {name} has {n} point(s); give at least 2.")
    if n > MAX_CLOUD_POINTS:
        raise InputError(f"The {name} has {n:,} points; at most {MAX_CLOUD_POINTS:,} per cloud here (the dense plan "
                         "and exact EMD beside it grow as n²). Subsample it.")
    points = arr[:, :cols]
    if weights_column:
        w = arr[:, cols]
        if (w < 0).any():
            raise InputError(f"The {name}'s weight column has negative values: a point has no negative mass.")
        if not w.sum() > 0:
            raise InputError(f"The {name}'s weights sum to 0: there is nothing to transport.")
        w = w / w.sum()
    else:
        w = np.full(n, 1.0 / n)
    return points, w


def strongest(plan: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, cols, mass) of the plan's k largest entries, largest first."""
    flat = plan.ravel()
    k = int(min(max(k, 0), np.count_nonzero(flat)))
    if k == 0:
        return np.zeros(0, int), np.zeros(0, int), np.zeros(0)
    idx = np.argpartition(flat, -k)[-k:]
    idx = idx[np.argsort(flat[idx])[::-1]]
    rows, cols = np.divmod(idx, plan.shape[1])
    return rows, cols, flat[idx]


def cloud_figure(result, links: int):
    """Both clouds (marker area ∝ weight) and the plan's ``links`` strongest couplings as segments."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    x, y = result.x, result.y
    three = x.shape[1] == 3
    fig = Figure(figsize=(6.4, 5.6), layout="constrained")
    ax = fig.add_subplot(projection="3d" if three else None)
    rows, cols, mass = strongest(result.plan, links)
    if len(mass):
        alpha = 0.15 + 0.75 * mass / mass.max()
        segs = np.stack([x[rows], y[cols]], axis=1)
        if three:
            from mpl_toolkits.mplot3d.art3d import Line3DCollection

            ax.add_collection(Line3DCollection(segs, colors=[(0.2, 0.2, 0.2, a) for a in alpha], linewidths=0.8))
        else:
            from matplotlib.collections import LineCollection

            ax.add_collection(LineCollection(segs, colors=[(0.2, 0.2, 0.2, a) for a in alpha], linewidths=0.8))
    for pts, w, colour, label in ((x, result.wa, "tab:blue", f"first cloud ({len(x)})"),
                                  (y, result.wb, "tab:orange", f"second cloud ({len(y)})")):
        size = 8 + 60 * w / w.max()
        ax.scatter(*pts.T, s=size, c=colour, alpha=0.8, label=label, edgecolors="none")
    if not three:
        ax.set_aspect("equal", adjustable="datalim")
    ax.legend(loc="upper right", fontsize=8)
    info = result.info
    fig.supxlabel(f"{len(mass)} strongest couplings · cost {result.cost:.4g} ({info['cost_name']}, scaled), exact "
                 f"{result.exact_cost:.4g}, gap {info['relative_gap']:.1e}", fontsize=9)
    return fig
