"""The files of an aggregation run (the one writer: the tab, the CLI and a replay all write these):
``predictions.npz`` (test inputs, target, every model's and every method's predictions), ``weights.npz`` (the
weights α(x) of each aggregate on the test points, and MEVA's / MEEA's fitted coefficients), ``metrics.json`` and
the plots (test error of every method, each model's errors, the weight maps). Both .npz load with ``np.load``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from backends.common.files import write_text

from .catalog import METHOD_LABELS

COLORS = {"meva": "tab:green", "meea": "tab:red", "stacking": "tab:purple", "average": "tab:gray",
          "inverse_variance": "tab:olive", "best_single": "tab:blue"}


def _figure(*args, **kwargs):
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def plot_mse(result, path: Path) -> Path:
    """Test MSE of every method (bars, log scale) with its training MSE (ticks): a train ≪ test gap is overfitting."""
    methods = list(result.test_mse)
    fig, ax = _figure(figsize=(7, 3.2))
    ypos = np.arange(len(methods))[::-1]
    ax.barh(ypos, [result.test_mse[m] for m in methods], color=[COLORS[m] for m in methods], alpha=0.85,
            label="test MSE")
    ax.scatter([max(result.train_mse[m], 1e-300) for m in methods], ypos, marker="|", s=400, color="k",
               label="training MSE", zorder=3)
    label = {**METHOD_LABELS, "best_single": f"best single ({result.best_model})"}
    ax.set_yticks(ypos, [label[m] for m in methods])
    ax.set_xscale("log")
    from matplotlib.ticker import NullFormatter

    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("mean squared error (log)")
    ax.set_title(f"{result.problem}: {result.n_train} {result.train_unit} to learn from")
    ax.legend(loc="lower right", fontsize=8)
    return _save(fig, path)


def _map_slice(result):
    rows = result.map_rows if result.map_rows is not None else np.arange(len(result.y_test))
    return rows


def plot_errors(result, path: Path) -> Path:
    """Each model's error on the test points: along x (1-D problems, one test instance), as maps (Laplace, one
    test forcing), or predicted vs true (diabetes)."""
    names = result.model_names
    rows = _map_slice(result)
    if result.kind in ("line", "field1d"):
        x = result.x_test[rows, 0]
        order = np.argsort(x)
        fig, (top, bottom) = _figure(2, 1, figsize=(7, 5.5), sharex=True)
        top.plot(x[order], result.y_test[rows][order], "k-", lw=2, label="target")
        for i, n in enumerate(names):
            top.plot(x[order], result.m_test[rows, i][order], "--", lw=1, label=n)
        for m in ("meva", "meea"):
            top.plot(x[order], result.predictions[m][rows][order], color=COLORS[m], lw=1.5, label=METHOD_LABELS[m])
        top.legend(fontsize=7, ncol=2)
        top.set_title("predictions" + (" (one test solution)" if result.kind == "field1d" else ""))
        for i, n in enumerate(names):
            bottom.semilogy(x[order], np.abs(result.m_test[rows, i] - result.y_test[rows])[order] + 1e-12, label=n)
        bottom.set_xlabel(result.feature_names[0])
        bottom.set_ylabel("|model − target|")
        bottom.legend(fontsize=7)
        return _save(fig, path)
    if result.kind == "field2d":
        shape = result.map_shape
        fig, axes = _figure(1, len(names), figsize=(2.4 * len(names), 2.6))
        err = np.abs(result.m_test[rows] - result.y_test[rows, None])
        lo, hi = np.log10(err.max() + 1e-12) - 6, np.log10(err.max() + 1e-12)
        for i, (ax, n) in enumerate(zip(np.atleast_1d(axes), names, strict=True)):
            im = ax.imshow(np.log10(err[:, i].reshape(shape).T + 1e-12), origin="lower", extent=(0, 1, 0, 1),
                           vmin=lo, vmax=hi, cmap="magma")
            ax.set_title(f"{n}\nMSE {np.mean(err[:, i] ** 2):.2g}", fontsize=8)
            ax.set_xticks([])
            ax.set_yticks([])
        fig.colorbar(im, ax=list(np.atleast_1d(axes)), shrink=0.8, label="log10 |error|")
        fig.suptitle("each model's error on one test forcing", fontsize=9)
        import matplotlib.pyplot as plt

        fig.savefig(path, dpi=80)
        plt.close(fig)
        return path
    fig, axes = _figure(1, len(names), figsize=(2.2 * len(names), 2.6), sharey=True)
    for i, (ax, n) in enumerate(zip(np.atleast_1d(axes), names, strict=True)):
        ax.scatter(result.y_test, result.m_test[:, i], s=6, alpha=0.6)
        lim = [result.y_test.min(), result.y_test.max()]
        ax.plot(lim, lim, "k-", lw=0.8)
        ax.set_title(f"{n}\nMSE {result.model_test_mse[n]:.3g}", fontsize=8)
        ax.set_xlabel("true")
    np.atleast_1d(axes)[0].set_ylabel("predicted")
    return _save(fig, path)


def plot_weights(result, path: Path) -> Path:
    """The weights α_i(x) MEVA and MEEA learned, on the test points (rows: the two methods; Laplace: maps)."""
    names = result.model_names
    rows = _map_slice(result)
    methods = ("meva", "meea")
    if result.kind == "field2d":
        fig, axes = _figure(2, len(names), figsize=(2.3 * len(names), 4.8))
        for r, m in enumerate(methods):
            for i, n in enumerate(names):
                ax = axes[r, i]
                im = ax.imshow(result.weights[m][rows, i].reshape(result.map_shape).T, origin="lower",
                               extent=(0, 1, 0, 1), vmin=0, vmax=1, cmap="viridis")
                ax.set_title(f"{m.upper()} · {n}", fontsize=8)
                ax.set_xticks([])
                ax.set_yticks([])
        fig.colorbar(im, ax=list(axes.ravel()), shrink=0.8, label="weight α(x)")
        import matplotlib.pyplot as plt

        fig.savefig(path, dpi=80)
        plt.close(fig)
        return path
    if result.kind in ("line", "field1d"):
        x = result.x_test[rows, 0]
        order = np.argsort(x)
        fig, axes = _figure(2, 1, figsize=(7, 4.8), sharex=True)
        for ax, m in zip(axes, methods, strict=True):
            for i, n in enumerate(names):
                ax.plot(x[order], result.weights[m][rows, i][order], label=n)
            ax.set_ylim(-0.05, 1.05)
            ax.set_ylabel(f"{m.upper()} α(x)")
            ax.legend(fontsize=7, ncol=len(names))
        axes[-1].set_xlabel(result.feature_names[0])
        return _save(fig, path)
    fig, axes = _figure(1, 2, figsize=(8, 3.2), sharey=True)
    for ax, m in zip(axes, methods, strict=True):
        ax.boxplot([result.weights[m][:, i] for i in range(len(names))], showfliers=False)
        ax.set_xticks(range(1, len(names) + 1), names, rotation=30, fontsize=7)
        ax.set_title(f"{m.upper()}: weights over the test rows", fontsize=9)
    axes[0].set_ylabel("α(x)")
    return _save(fig, path)


def write_files(result, folder: Path) -> dict[str, Path]:
    folder = Path(folder)
    paths = {"mse_plot": plot_mse(result, folder / "test_mse.png"),
             "errors_plot": plot_errors(result, folder / "model_errors.png"),
             "weights_plot": plot_weights(result, folder / "weight_maps.png")}
    names = np.array(result.model_names)
    np.savez(folder / "predictions.npz", x_test=result.x_test, y_test=result.y_test, model_outputs=result.m_test,
             model_names=names, feature_names=np.array(result.feature_names),
             **{f"pred_{m}": p for m, p in result.predictions.items()})
    np.savez(folder / "weights.npz", model_names=names, x_test=result.x_test,
             **{f"alpha_{m}": w for m, w in result.weights.items()},
             **{f"{m}_{k}": v for m, params in result.parameters.items() for k, v in params.items()})
    paths["predictions"], paths["weights"] = folder / "predictions.npz", folder / "weights.npz"
    paths["metrics"] = write_text(folder / "metrics.json", json.dumps(result.to_json(), indent=2))
    return paths


def plot_sweep(result, path: Path) -> Path:
    fig, ax = _figure(figsize=(7, 3.6))
    for m, values in result.test_mse.items():
        ax.loglog(result.sizes, values, "o-", color=COLORS[m], label=f"{METHOD_LABELS[m]} (test)")
    for m in ("meva", "meea"):
        ax.loglog(result.sizes, np.maximum(result.train_mse[m], 1e-300), "x:", color=COLORS[m],
                  label=f"{m.upper()} (training)")
    ax.set_xlabel(f"training-set size ({result.train_unit})")
    ax.set_ylabel("MSE (median over seeds)")
    ax.set_title(f"{result.request.problem}: test error as the training set grows")
    ax.legend(fontsize=7)
    return _save(fig, path)


def write_sweep(result, folder: Path) -> dict[str, Path]:
    folder = Path(folder)
    path = folder / "sweep.json"
    write_text(path, json.dumps(result.to_json(), indent=2))
    return {"sweep_plot": plot_sweep(result, folder / "sweep.png"), "sweep": path}
