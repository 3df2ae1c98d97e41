"""The CI Test capability's typed requests: where the data comes from (a graph to simulate or a CSV), then one
CI statement to test or the whole graph to discover. Light to import (no SciPy, no causal-learn)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backends.common.errors import InputError
from backends.common.params import param, seed_param

GRAPH_KINDS = ("chain", "fork", "collider", "random", "custom")
MAX_VARIABLES = 12  # PC's number of tests grows quickly with the variables: 12 stay within seconds here
MAX_ROWS = 20000
ROWS_PER_VARIABLE = 20  # a test of X ⊥ Y | S needs at least 20·(|S| + 2) rows


@dataclass
class DataRequest:
    """The data: simulated from a graph (a linear-Gaussian SEM, chosen variables observed discretized), or a CSV."""

    graph: str = param("chain", choices=GRAPH_KINDS, label="Graph",
                       help="The causal DAG to simulate: chain X1→X2→…, fork X1→{others}, collider {others}→Xp, "
                            "a random DAG, or custom edges.")
    nodes: int = param(3, minimum=2, maximum=MAX_VARIABLES, label="Variables",
                       help="How many variables the chain, fork, collider or random DAG has.")
    edges: str = param("", label="Custom edges",
                       help="For a custom graph: edges such as A->B, B->C (a DAG, at most 12 variables).")
    density: float = param(1.5, minimum=0.5, maximum=4.0, step=0.5, label="Random DAG: expected neighbours",
                           help="Expected number of neighbours per variable in a random DAG.")
    n: int = param(1000, minimum=20, maximum=MAX_ROWS, label="Sample size n",
                   help="Rows simulated from the graph.")
    discretized: str = param("all", label="Discretized variables",
                             help="Which variables are observed only discretized: 'all', 'none' or names "
                                  "(X1, X3 …; for a CSV: its column names).")
    levels: int = param(2, minimum=2, maximum=10, label="Levels",
                        help="Into how many ordered levels each discretized variable is cut (random thresholds in "
                             "[−1, 1] of its standardised latent value).")
    alpha: float = param(0.05, minimum=0.001, maximum=0.5, step=0.001, label="Significance level α",
                         help="A p-value below α rejects independence.")
    seed: int = seed_param("Same seed and settings → the same graph, data and p-values.")
    csv: Path | None = param(None, help="A CSV of your own (a header row of column names, numbers only): its "
                                        "columns replace the simulated graph; 'discretized' names its discretized "
                                        "columns. There is no true graph then.")

    def validate(self) -> None:
        if self.graph == "custom" and self.csv is None and not self.edges.strip():
            raise InputError("Type the custom graph's edges (e.g. A->B, B->C), or pick another graph.")


@dataclass
class TestRequest(DataRequest):
    """One CI statement X ⊥ Y | S tested by DCT, Fisher-z and chi-square on the same data."""

    __test__ = False  # not a pytest test class

    x: str = param("X1", label="X", help="The first variable of the statement (a name).")
    y: str = param("X3", label="Y", help="The second variable of the statement (a name).")
    given: str = param("X2", label="Given S",
                       help="The conditioning set: names separated by commas (empty: marginal independence).")


@dataclass
class DiscoverRequest(DataRequest):
    """PC (causal-learn) with each CI test on the same data; recovered graphs against the truth."""

    max_depth: int = param(-1, minimum=-1, maximum=MAX_VARIABLES - 2, label="PC: largest conditioning set",
                           help="The largest conditioning set PC tries (−1: no limit, PC's default).")
