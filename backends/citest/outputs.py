"""Raw outputs of a CI Test run, written the same way by the tab and the CLI, and the pictures the tab shows.

*Test*: ``pvalues.csv`` (test, p-value, decision at α, truth), ``pvalues.png``, ``result.json``, ``data.csv`` (the observed
table, header row: load it back as a CSV upload) and the true graph as ``true_graph.json`` / ``.graphml``.
*Discover*: ``graphs.json`` (truth and every recovered graph with its scores), one GraphML per graph,
``ci_tests.csv`` (every CI test PC made, by test), ``data.csv`` and ``graphs.png``. ``Action.write_run``
adds ``run.json``, which ``iclr25-studio replay`` runs again to the same numbers.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from backends.common.files import write_bytes, write_text

from .citests import LABELS
from .service import DiscoverResult, TestResult


def _csv_text(rows: list[list]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def write_data(X: np.ndarray, names, path: Path) -> Path:
    rows = [list(names)] + [[f"{v:.10g}" for v in row] for row in X]
    return write_text(path, _csv_text(rows))


def graphml_text(nodes, edges: list[dict]) -> str:
    """A graph as GraphML (networkx): a directed edge once, an undirected one both ways, marked ``directed``."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    for e in edges:
        g.add_edge(e["from"], e["to"], directed=bool(e["directed"]))
        if not e["directed"]:
            g.add_edge(e["to"], e["from"], directed=False)
    buf = io.BytesIO()
    nx.write_graphml(g, buf)
    return buf.getvalue().decode()


def read_graphml(path: Path) -> tuple[list[str], list[dict]]:
    """A GraphML written here, back as (nodes, edges) (an undirected edge once)."""
    import networkx as nx

    g = nx.read_graphml(path)
    edges, seen = [], set()
    for a, b, d in g.edges(data=True):
        if d.get("directed", True):
            edges.append({"from": a, "to": b, "directed": True})
        elif frozenset((a, b)) not in seen:
            seen.add(frozenset((a, b)))
            edges.append({"from": a, "to": b, "directed": False})
    return list(g.nodes), edges


def write_test_files(result: TestResult, folder: Path) -> dict[str, Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rejects, correct = result.reject(), result.correct()
    rows = [["test", "statement", "p_value", "alpha", "rejects_independence", "truth", "correct"]]
    for t, p in result.p_values.items():
        rows.append([t, result.statement, f"{p:.10g}", result.alpha, rejects[t], result.truth or "",
                     "" if correct is None else correct[t]])
    paths = {"pvalues": write_text(folder / "pvalues.csv", _csv_text(rows)),
             "result": write_text(folder / "result.json", json.dumps(result.to_json(), indent=2)),
             "picture": write_bytes(folder / "pvalues.png", pvalue_png(result))}
    if result.data is not None:
        paths["data"] = write_data(result.data, result.names, folder / "data.csv")
    if result.graph is not None:
        edges = [{"from": a, "to": b, "directed": True} for a, b in result.graph["edges"]]
        paths["true_graph"] = write_text(folder / "true_graph.json", json.dumps(result.graph, indent=2))
        paths["true_graph_graphml"] = write_text(folder / "true_graph.graphml",
                                                 graphml_text(result.graph["nodes"], edges))
    return paths


def write_discover_files(result: DiscoverResult, folder: Path) -> dict[str, Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    body = result.to_json()
    paths = {"graphs": write_text(folder / "graphs.json", json.dumps(body, indent=2))}
    graphs = dict(_truth_graphs(result))
    graphs.update({t: r.edges(result.names) for t, r in result.recovered.items()})
    for name, edges in graphs.items():
        paths[f"graph_{name}"] = write_text(folder / f"graph_{name}.graphml", graphml_text(result.names, edges))
    rows = [["test", "x", "y", "given", "p_value"]]
    for t, log in result.logs.items():
        rows += [[t, x, y, " ".join(s), f"{p:.10g}"] for x, y, s, p in log]
    paths["ci_tests"] = write_text(folder / "ci_tests.csv", _csv_text(rows))
    if result.data is not None:
        paths["data"] = write_data(result.data, result.names, folder / "data.csv")
    paths["picture"] = write_bytes(folder / "graphs.png", graphs_png(result))
    return paths


def _truth_graphs(result: DiscoverResult):
    if result.truth is not None:
        yield "true_dag", [{"from": a, "to": b, "directed": True} for a, b in result.truth["dag"]]
        yield "true_cpdag", result.truth["cpdag"]


def graphs_png(result: DiscoverResult) -> bytes:
    """The true CPDAG (where known) beside PC's graph with each test; in a recovered graph an extra adjacency is
    red and a missed one a dashed grey line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(_truth_graphs(result))[1:] + [(t, r.edges(result.names)) for t, r in result.recovered.items()]
    truth_adj = {frozenset((e["from"], e["to"])) for e in result.truth["cpdag"]} if result.truth else None
    width = 3.2 * len(panels) if len(panels) > 1 else 4.2
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 3.9 if len(panels) > 1 else 4.2), dpi=100)
    axes = np.atleast_1d(axes)
    p = len(result.names)
    angle = np.pi / 2 - 2 * np.pi * np.arange(p) / p
    pos = {name: (np.cos(a), np.sin(a)) for name, a in zip(result.names, angle, strict=True)}
    scores = result.scores()
    for ax, (name, edges) in zip(axes, panels, strict=True):
        found = set()
        for e in edges:
            key = frozenset((e["from"], e["to"]))
            found.add(key)
            colour = "black" if truth_adj is None or key in truth_adj or name == "true_cpdag" else "#d62728"
            _edge(ax, pos[e["from"]], pos[e["to"]], e["directed"], colour)
        if truth_adj is not None and name != "true_cpdag":
            for key in truth_adj - found:
                a, b = tuple(key)
                ax.plot(*zip(pos[a], pos[b], strict=True), ls="--", color="#bbbbbb", lw=1, zorder=0)
        for node, (x, y) in pos.items():
            ax.scatter([x], [y], s=420, color="#dbe9f6", edgecolors="#1f4e79", zorder=2)
            ax.text(x, y, node, ha="center", va="center", fontsize=8, zorder=3)
        if name == "true_cpdag":
            title = "truth (CPDAG)"
        else:
            s = scores[name]
            title = {"dag": "the true DAG"}.get(name, LABELS.get(name, name)) + (
                "" if s["shd"] is None else f"\nSHD {s['shd']} · F1 {s['f1']:.2f}")
        ax.set_title(title, fontsize=10)
        ax.set_xlim(-1.35, 1.35)
        ax.set_ylim(-1.35, 1.35)
        ax.set_aspect("equal")
        ax.axis("off")
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.86, wspace=0.05)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _edge(ax, a, b, directed: bool, colour: str) -> None:
    if directed:
        ax.annotate("", xy=b, xytext=a, zorder=1,
                    arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 1.4, "shrinkA": 11, "shrinkB": 11})
    else:
        ax.plot(*zip(a, b, strict=True), color=colour, lw=1.4, zorder=1)


def pvalue_png(result: TestResult) -> bytes:
    """The three p-values on a log scale with the α line: where each test lands against the truth."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tests = list(result.p_values)
    vals = [max(result.p_values[t], 1e-300) for t in tests]
    fig, ax = plt.subplots(figsize=(5, 2.4), dpi=100)
    colours = ["#1f77b4" if t == "dct" else "#999999" for t in tests]
    ax.barh([LABELS[t] for t in tests], [-np.log10(v) for v in vals], color=colours)
    ax.axvline(-np.log10(result.alpha), color="#d62728", ls="--", lw=1)
    ax.set_xlabel(f"−log10 p  (right of the dashed line α = {result.alpha:g}: independence rejected)", fontsize=9)
    truth = "" if result.truth is None else f" — truth: {result.truth}"
    ax.set_title(result.statement + truth, fontsize=10)
    ax.invert_yaxis()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def dag_png(graph) -> bytes:
    """The true DAG of the data source, drawn as the tab previews it before a run."""
    from .discovery import Recovered

    p = len(graph.names)
    adj = np.zeros((p, p), dtype=int)
    for i, j in zip(*np.nonzero(graph.adj), strict=True):
        adj[j, i], adj[i, j] = 1, -1
    shown = DiscoverResult(names=graph.names, truth=None, truth_endpoints=None,
                           recovered={"dag": Recovered("dag", adj, -1, float("nan"), float("nan"), float("nan"), 0)},
                           logs={}, alpha=0.05, n=0, discretized=[])
    return graphs_png(shown)
