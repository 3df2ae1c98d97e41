"""The causal graphs the tab offers and the data they generate: a linear-Gaussian SEM on a DAG whose chosen
variables are then observed only discretized (their latent values cut at thresholds).

A graph is a list of node names and a boolean adjacency matrix (``adj[i, j]``: i → j), built from a kind
(chain, fork, collider, random DAG) or from an edge list a person types (``A->B, B->C``). The truth of a CI
statement is d-separation in the DAG (networkx), and PC's target is the DAG's CPDAG (causal-learn).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from backends.common.errors import InputError

KINDS = ("chain", "fork", "collider", "random", "custom")
MAX_NODES = 12  # the tab's limit: PC with DCT on 12 nodes stays within seconds on 2 cores


@dataclass(frozen=True)
class Graph:
    """A DAG: node names and its adjacency (``adj[i, j]`` True: an edge i → j)."""

    names: tuple[str, ...]
    adj: np.ndarray

    @property
    def edges(self) -> list[tuple[str, str]]:
        return [(self.names[i], self.names[j]) for i, j in zip(*np.nonzero(self.adj), strict=True)]

    def index(self, name: str) -> int:
        try:
            return self.names.index(name.strip())
        except ValueError:
            raise InputError(f"No variable is called {name.strip()!r}; the graph has {', '.join(self.names)}.") from None

    def d_separated(self, x: int, y: int, given) -> bool:
        """Whether x and y are d-separated by ``given`` in the DAG (the truth a CI test should find)."""
        import networkx as nx

        g = nx.DiGraph()
        g.add_nodes_from(range(len(self.names)))
        g.add_edges_from(zip(*np.nonzero(self.adj), strict=True))
        return bool(nx.is_d_separator(g, {x}, {y}, set(given)))

    def to_json(self) -> dict:
        return {"nodes": list(self.names), "edges": [list(e) for e in self.edges]}


def names_for(p: int) -> tuple[str, ...]:
    return tuple(f"X{i + 1}" for i in range(p))


def make_graph(kind: str, nodes: int, edges: str = "", density: float = 1.5, seed: int = 0) -> Graph:
    """The DAG of a kind: chain X1→…→Xp, fork X1→{X2…Xp}, collider {X1…Xp−1}→Xp, a random DAG with
    ``density`` expected parents per node (a random order, then edges forward), or ``custom`` edges."""
    if kind == "custom":
        return parse_edges(edges)
    if not 2 <= nodes <= MAX_NODES:
        raise InputError(f"A graph here has 2 to {MAX_NODES} variables (PC's tests grow fast with more); got {nodes}.")
    adj = np.zeros((nodes, nodes), dtype=bool)
    if kind == "chain":
        adj[np.arange(nodes - 1), np.arange(1, nodes)] = True
    elif kind == "fork":
        adj[0, 1:] = True
    elif kind == "collider":
        adj[:-1, -1] = True
    elif kind == "random":
        rng = np.random.default_rng(seed)
        prob = min(1.0, 2 * density / max(1, nodes - 1))
        upper = np.triu(rng.random((nodes, nodes)) < prob, 1)
        order = rng.permutation(nodes)
        adj = np.zeros_like(upper)
        adj[np.ix_(order, order)] = upper
    else:
        raise InputError(f"Unknown graph kind {kind!r}; one of {', '.join(KINDS)}.")
    return Graph(names_for(nodes), adj)


def parse_edges(text: str) -> Graph:
    """A DAG from ``A->B, B->C`` (commas, semicolons or new lines between edges); refuses cycles."""
    import networkx as nx

    pairs = []
    for part in re.split(r"[,;\n]+", text or ""):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"([A-Za-z_][\w]*)\s*(?:->|→)\s*([A-Za-z_][\w]*)", part)
        if not m:
            raise InputError(f"Cannot read the edge {part!r}: write edges as A->B, separated by commas.")
        pairs.append((m.group(1), m.group(2)))
    if not pairs:
        raise InputError("Type the graph's edges (e.g. A->B, B->C) for a custom graph.")
    names = tuple(dict.fromkeys(n for e in pairs for n in e))
    if len(names) > MAX_NODES:
        raise InputError(f"A graph here has at most {MAX_NODES} variables; these edges name {len(names)}.")
    adj = np.zeros((len(names), len(names)), dtype=bool)
    for a, b in pairs:
        if a == b:
            raise InputError(f"The edge {a}->{b} is a self-loop; a causal graph here is a DAG.")
        adj[names.index(a), names.index(b)] = True
    if not nx.is_directed_acyclic_graph(nx.DiGraph([(names.index(a), names.index(b)) for a, b in pairs])):
        raise InputError("Those edges make a cycle; a causal graph here is a DAG.")
    return Graph(names, adj)


def sample_latent(graph: Graph, n: int, rng: np.random.Generator) -> np.ndarray:
    """n draws of the linear-Gaussian SEM: each variable = Σ w·parents + N(0, 1), |w| ∈ [0.5, 1.5] with random
    signs, each column standardised (so thresholds in [−1, 1] cut every variable somewhere in its bulk)."""
    import networkx as nx

    p = len(graph.names)
    weights = rng.uniform(0.5, 1.5, (p, p)) * rng.choice([-1.0, 1.0], (p, p)) * graph.adj
    order = list(nx.topological_sort(nx.DiGraph([(int(i), int(j)) for i, j in zip(*np.nonzero(graph.adj), strict=True)])))
    order += [j for j in range(p) if j not in order]
    z = np.zeros((n, p))
    for j in order:
        z[:, j] = z @ weights[:, j] + rng.normal(size=n)
        z[:, j] = (z[:, j] - z[:, j].mean()) / z[:, j].std()
    return z


def discretize(z: np.ndarray, which: list[int], levels: int, rng: np.random.Generator) -> np.ndarray:
    """The observed data: the ``which`` columns cut into ``levels`` ordered levels (0 … levels−1) at sorted
    random thresholds in [−1, 1] (the authors' simulation draws a binarising threshold from U(−1, 1)),
    the others kept continuous."""
    x = z.copy()
    for j in which:
        cuts = np.sort(rng.uniform(-1, 1, levels - 1))
        x[:, j] = np.searchsorted(cuts, z[:, j]).astype(float)
    return x


def parse_variables(text: str, graph: Graph) -> list[int]:
    """The variables named in ``text`` (``all``, ``none`` or names separated by commas) as indices."""
    t = (text or "").strip().lower()
    if t in ("all", "*"):
        return list(range(len(graph.names)))
    if t in ("", "none"):
        return []
    return sorted({graph.index(name) for name in re.split(r"[,\s]+", text.strip()) if name})
