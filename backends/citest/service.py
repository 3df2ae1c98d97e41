"""The CI Test capability's two pieces of work, as long-work generators (progress events, then a typed result):
test one CI statement with the three tests, or discover the graph with PC and each test."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from backends.common.errors import InputError
from backends.common.progress import CancelToken, ProgressEvent, raise_if_cancelled, relay, stream_reports

from .data import check_rows, load_data
from .requests import DiscoverRequest, TestRequest

DEVICE = "CPU (NumPy/SciPy; causal-learn's PC)"


@dataclass
class TestResult:
    """One CI statement's p-values by test, the decisions at α, and the truth where the graph is known."""

    __test__ = False

    statement: str
    x: str
    y: str
    given: list[str]
    p_values: dict[str, float]
    alpha: float
    truth: str | None  # "independent" (d-separated), "dependent", or None for a CSV
    dct: dict  # DCT's estimate (β̂ or σ̂), variance, z
    n: int
    discretized: list[str]
    graph: dict | None
    seconds: dict[str, float] = field(default_factory=dict)
    data: np.ndarray | None = None  # the observed table (written as data.csv)
    names: tuple[str, ...] = ()

    def reject(self) -> dict[str, bool]:
        return {t: p < self.alpha for t, p in self.p_values.items()}

    def correct(self) -> dict[str, bool] | None:
        if self.truth is None:
            return None
        return {t: r == (self.truth == "dependent") for t, r in self.reject().items()}

    def to_json(self) -> dict:
        return {"statement": self.statement, "p_values": self.p_values, "alpha": self.alpha,
                "rejects_independence": self.reject(), "truth": self.truth, "correct": self.correct(),
                "dct": self.dct, "n": self.n, "discretized": self.discretized, "graph": self.graph,
                "seconds": self.seconds, "device": DEVICE}


@dataclass
class DiscoverResult:
    """PC's graph with each test, scored against the true CPDAG where the graph is known."""

    names: tuple[str, ...]
    truth: dict | None  # {"dag": edges, "cpdag": edges}
    truth_endpoints: np.ndarray | None
    recovered: dict  # test -> Recovered
    logs: dict  # test -> [(x, y, given, p)]
    alpha: float
    n: int
    discretized: list[str]
    seconds: dict[str, float] = field(default_factory=dict)
    data: np.ndarray | None = None

    def scores(self) -> dict:
        return {t: {"shd": r.shd if self.truth is not None else None,
                    "f1": r.f1 if self.truth is not None else None,
                    "precision": r.precision if self.truth is not None else None,
                    "recall": r.recall if self.truth is not None else None,
                    "tests_run": r.tests_run} for t, r in self.recovered.items()}

    def to_json(self) -> dict:
        return {"variables": list(self.names), "truth": self.truth, "alpha": self.alpha, "n": self.n,
                "discretized": self.discretized, "scores": self.scores(),
                "recovered": {t: r.edges(self.names) for t, r in self.recovered.items()},
                "seconds": self.seconds, "device": DEVICE}


def run_test(request: TestRequest, cancel: CancelToken | None = None):
    """Events, then a :class:`TestResult`: the data, then DCT, Fisher-z and chi-square on one statement."""
    from .citests import LABELS, TESTS, pvalues
    from .dct import conditional_test, estimate_bridge

    yield ProgressEvent(0.05, "Preparing the data…")
    ds = load_data(request)
    x, y = ds.index(request.x), ds.index(request.y)
    given = ds.indices(request.given)
    if x == y:
        raise InputError("X and Y must be two different variables.")
    if x in given or y in given:
        raise InputError("The conditioning set S must not contain X or Y.")
    if len(set(given)) != len(given):
        raise InputError("A variable is named twice in S.")
    check_rows(ds.n, len(given))
    p_values, seconds = {}, {}
    for k, test in enumerate(TESTS):
        raise_if_cancelled(cancel)
        yield ProgressEvent(0.1 + 0.8 * k / len(TESTS), f"{LABELS[test]}…")
        t0 = time.perf_counter()
        p_values.update(pvalues(ds.X, x, y, given, tests=(test,), discrete=ds.discrete))
        seconds[test] = time.perf_counter() - t0
    cols = [x, y, *given]
    bridge = estimate_bridge(ds.X[:, cols], ds.discrete[cols])
    d = conditional_test(bridge, 0, 1, list(range(2, len(cols))))
    truth = None
    if ds.graph is not None:
        truth = "independent" if ds.graph.d_separated(x, y, given) else "dependent"
    names = [ds.names[i] for i in given]
    statement = f"{ds.names[x]} ⊥ {ds.names[y]}" + (f" | {', '.join(names)}" if names else "")
    yield ProgressEvent(1.0, "Done.")
    yield TestResult(statement=statement, x=ds.names[x], y=ds.names[y], given=names, p_values=p_values,
                     alpha=request.alpha, truth=truth,
                     dct={"estimate": d.estimate, "variance": d.variance, "z": d.z,
                          "statistic": "beta (nodewise regression)" if given else "sigma (latent correlation)"},
                     n=ds.n, discretized=[ds.names[j] for j in np.flatnonzero(ds.discrete)],
                     graph=ds.graph.to_json() if ds.graph is not None else None, seconds=seconds,
                     data=ds.X, names=ds.names)


def run_discover(request: DiscoverRequest, cancel: CancelToken | None = None):
    """Events, then a :class:`DiscoverResult`: PC with DCT, Fisher-z and chi-square on the same data."""
    from .citests import LABELS, TESTS
    from .discovery import run_pc, true_cpdag

    yield ProgressEvent(0.02, "Preparing the data…")
    ds = load_data(request)
    p = len(ds.names)
    depth = None if request.max_depth < 0 else request.max_depth
    check_rows(ds.n, min(p - 2, depth if depth is not None else p - 2))
    truth = true_cpdag(ds.graph) if ds.graph is not None else None
    recovered, logs, seconds = {}, {}, {}
    for k, test in enumerate(TESTS):
        start, end = 0.05 + 0.9 * k / len(TESTS), 0.05 + 0.9 * (k + 1) / len(TESTS)

        def work(report, test=test, start=start, end=end):
            def on_test(count):
                if count % 25 == 0:  # PC's total is unknown in advance: a slowly filling bar, the count in words
                    report(ProgressEvent(start + (end - start) * (1 - 1 / (1 + count / 200)),
                                         f"PC with {LABELS[test]}: {count} CI tests"))

            kwargs = {"discrete": ds.discrete} if test == "dct" else {}
            t0 = time.perf_counter()
            rec, log = run_pc(ds.X, test, request.alpha, ds.names, truth, report.cancel, on_test, depth, **kwargs)
            return rec, log, time.perf_counter() - t0

        yield ProgressEvent(start, f"PC with {LABELS[test]}…")
        recovered[test], logs[test], seconds[test] = yield from relay(stream_reports(work, cancel))
    yield ProgressEvent(1.0, "Done.")
    truth_json = None
    if ds.graph is not None:
        from .discovery import Recovered

        cp = Recovered("truth", truth, 0, 1.0, 1.0, 1.0, 0).edges(ds.names)
        truth_json = {"dag": ds.graph.to_json()["edges"], "cpdag": cp}
    return_value = DiscoverResult(names=ds.names, truth=truth_json, truth_endpoints=truth, recovered=recovered,
                                  logs=logs, alpha=request.alpha, n=ds.n,
                                  discretized=[ds.names[j] for j in np.flatnonzero(ds.discrete)], seconds=seconds,
                                  data=ds.X)
    yield return_value

