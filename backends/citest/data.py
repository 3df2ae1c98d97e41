"""The data a request names: simulated from its graph, or read from an uploaded CSV, checked at the boundary
(non-numeric or constant columns, missing values, too many variables or rows) with messages a person can act on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from backends.common.errors import InputError

from .graphs import Graph, discretize, make_graph, parse_variables, sample_latent
from .requests import MAX_ROWS, MAX_VARIABLES, ROWS_PER_VARIABLE, DataRequest

MAX_CSV_BYTES = 20 * 1024 * 1024


@dataclass
class Dataset:
    """Observed columns, their names, which are discretized, and the true graph when the data is simulated."""

    names: tuple[str, ...]
    X: np.ndarray  # (n, p) observed values (a discretized column holds its level codes 0 … levels−1)
    discrete: np.ndarray  # (p,) bool: observed only discretized
    graph: Graph | None  # None for a CSV

    @property
    def n(self) -> int:
        return self.X.shape[0]

    def index(self, name: str) -> int:
        name = name.strip()
        if name not in self.names:
            raise InputError(f"No variable is called {name!r}; the data has {', '.join(self.names)}.")
        return self.names.index(name)

    def indices(self, text: str) -> list[int]:
        import re

        return [self.index(t) for t in re.split(r"[,\s]+", (text or "").strip()) if t]


def load_data(request: DataRequest) -> Dataset:
    """The request's data set (its graph simulated with its seed, or its CSV read and checked)."""
    if request.csv is not None:
        return read_csv(Path(request.csv), request.discretized)
    graph = make_graph(request.graph, request.nodes, request.edges, request.density, request.seed)
    rng = np.random.default_rng(request.seed)
    which = parse_variables(request.discretized, graph)
    z = sample_latent(graph, request.n, rng)
    X = discretize(z, which, request.levels, rng)
    discrete = np.zeros(len(graph.names), dtype=bool)
    discrete[which] = True
    for j in which:
        if np.unique(X[:, j]).size < 2:
            raise InputError(f"{graph.names[j]} came out constant once discretized (all {request.n} rows in one "
                             "level): use a larger n or another seed.")
    return Dataset(graph.names, X, discrete, graph)


def read_csv(path: Path, discretized: str) -> Dataset:
    """A CSV with a header row: every column numeric, none constant, no gaps, at most 12 columns."""
    import pandas as pd

    if not path.is_file():
        raise InputError(f"The CSV {path.name} was not found.")
    if path.stat().st_size > MAX_CSV_BYTES:
        raise InputError(f"The CSV is {path.stat().st_size / 1e6:.0f} MB; this tab reads at most "
                         f"{MAX_CSV_BYTES // 2**20} MB.")
    try:
        frame = pd.read_csv(path)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as e:
        raise InputError(f"Cannot read {path.name} as a CSV with a header row: {str(e).splitlines()[0]}") from None
    if frame.shape[1] < 2 or frame.shape[0] < 1:
        raise InputError(f"{path.name} needs at least two columns and a header row of their names.")
    if frame.shape[1] > MAX_VARIABLES:
        raise InputError(f"{path.name} has {frame.shape[1]} columns; this tab tests at most {MAX_VARIABLES} "
                         "variables (PC's tests grow quickly with more). Keep the columns you care about.")
    if frame.shape[0] > MAX_ROWS:
        raise InputError(f"{path.name} has {frame.shape[0]} rows; this tab reads at most {MAX_ROWS}.")
    bad = [str(c) for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if bad:
        raise InputError(f"Column(s) {', '.join(bad)} are not numeric: code categories as numbers (0, 1, 2 …) "
                         "or drop those columns.")
    if frame.isna().any().any():
        gaps = [str(c) for c in frame.columns if frame[c].isna().any()]
        raise InputError(f"Column(s) {', '.join(gaps)} have missing values; fill or drop those rows first.")
    X = frame.to_numpy(dtype=float)
    if not np.isfinite(X).all():
        raise InputError(f"{path.name} holds infinite values.")
    names = tuple(str(c).strip() for c in frame.columns)
    constant = [names[j] for j in range(X.shape[1]) if np.unique(X[:, j]).size < 2]
    if constant:
        raise InputError(f"Column(s) {', '.join(constant)} are constant: nothing can be tested on them; drop them.")
    ds = Dataset(names, X, np.zeros(len(names), dtype=bool), None)
    t = (discretized or "").strip().lower()
    which = list(range(len(names))) if t in ("all", "*") else [] if t in ("", "none") else ds.indices(discretized)
    ds.discrete[which] = True
    return ds


def check_rows(n: int, given: int) -> None:
    """Refuse a test whose conditioning set needs more rows than there are."""
    need = ROWS_PER_VARIABLE * (given + 2)
    if n < need:
        raise InputError(f"n = {n} is too small for a conditioning set of {given}: a test of X ⊥ Y | S needs at "
                         f"least {ROWS_PER_VARIABLE} rows per variable involved ({need} here).")
