"""PC (causal-learn's ``pc``) with each CI test, and how far the recovered graph is from the truth.

The target is the true DAG's CPDAG (its Markov equivalence class, causal-learn's ``dag2cpdag``): PC can
orient no more. SHD counts node pairs whose edge differs (missing, extra or differently oriented; causal-learn's
``SHD``); edge F1 scores the skeleton (adjacencies found vs true), orientation aside.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from backends.common.progress import CancelToken

from .citests import method_name
from .graphs import Graph


@dataclass(frozen=True)
class Recovered:
    """A PC run's graph in causal-learn's endpoint encoding (``g[j, i] = 1, g[i, j] = −1``: i → j;
    both −1: i — j) and its scores against the truth."""

    test: str
    endpoints: np.ndarray
    shd: int
    f1: float
    precision: float
    recall: float
    tests_run: int

    def edges(self, names) -> list[dict]:
        """Each edge as {"from", "to", "directed"} (an undirected edge listed once)."""
        out = []
        g = self.endpoints
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                if g[i, j] == 0 and g[j, i] == 0:
                    continue
                if g[j, i] == 1 and g[i, j] == -1:
                    out.append({"from": names[i], "to": names[j], "directed": True})
                elif g[i, j] == 1 and g[j, i] == -1:
                    out.append({"from": names[j], "to": names[i], "directed": True})
                else:
                    out.append({"from": names[i], "to": names[j], "directed": False})
        return out


def true_cpdag(graph: Graph) -> np.ndarray:
    """The DAG's CPDAG in causal-learn's endpoint encoding."""
    from causallearn.graph.Dag import Dag
    from causallearn.graph.GraphNode import GraphNode
    from causallearn.utils.DAG2CPDAG import dag2cpdag

    nodes = [GraphNode(n) for n in graph.names]
    dag = Dag(nodes)
    for i, j in zip(*np.nonzero(graph.adj), strict=True):
        dag.add_directed_edge(nodes[i], nodes[j])
    return np.asarray(dag2cpdag(dag).graph)


def shd(truth: np.ndarray, est: np.ndarray) -> int:
    """Node pairs whose endpoints differ (causal-learn's ``SHD`` on the same encoding)."""
    i, j = np.triu_indices(truth.shape[0], 1)
    return int(np.sum((truth[i, j] != est[i, j]) | (truth[j, i] != est[j, i])))


def skeleton_scores(truth: np.ndarray, est: np.ndarray) -> tuple[float, float, float]:
    """(F1, precision, recall) of the adjacencies; a graph with no edges on either side scores 1."""
    i, j = np.triu_indices(truth.shape[0], 1)
    t = (truth[i, j] != 0) | (truth[j, i] != 0)
    e = (est[i, j] != 0) | (est[j, i] != 0)
    tp = int(np.sum(t & e))
    precision = tp / e.sum() if e.sum() else float(not t.any())
    recall = tp / t.sum() if t.sum() else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return float(f1), float(precision), float(recall)


def run_pc(X: np.ndarray, test: str, alpha: float, names, truth: np.ndarray | None = None,
           cancel: CancelToken | None = None, on_test: Callable[[int], None] | None = None,
           max_depth: int | None = None, **test_kwargs) -> tuple[Recovered, list[tuple]]:
    """causal-learn's PC (stable, orientation by sepsets, Meek's rules) with the named test; the recovered graph
    and the log of its CI tests ((x, y, S, p) by name)."""
    from causallearn.search.ConstraintBased.PC import pc

    cg = pc(np.asarray(X, dtype=float), alpha, method_name(test), stable=True, show_progress=False,
            node_names=list(names), max_k=max_depth, cancel=cancel, on_test=on_test, **test_kwargs)
    est = np.asarray(cg.G.graph)
    log = []
    for key, pval in cg.test.pvalue_cache.items():
        if key in ("data_hash", "method_name", "parameters_hash"):
            continue
        xy, _, s = key.partition("|")
        a, b = (int(v) for v in xy.split(";"))
        log.append((names[a], names[b], [names[int(v)] for v in s.split(".") if v], float(pval)))
    if truth is None:
        return Recovered(test, est, -1, float("nan"), float("nan"), float("nan"), cg.test.count), log
    f1, precision, recall = skeleton_scores(truth, est)
    return Recovered(test, est, shd(truth, est), f1, precision, recall, cg.test.count), log
