"""One aggregation run: the problem's split, MEVA, MEEA and the baselines fitted on the same training data, every
method's train and test error, the learned weights α(x) on the test points, and each model's errors there."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from backends.common.progress import CancelToken, ProgressEvent, raise_if_cancelled

from .catalog import METHODS
from .requests import AggregateRequest, SweepRequest, chosen_models


@dataclass
class AggregateResult:
    request: AggregateRequest
    problem: str
    model_names: list[str]
    feature_names: list[str]
    kind: str
    train_unit: str
    n_train: int  # in train_unit (capped by the problem)
    n_train_rows: int
    x_test: np.ndarray
    y_test: np.ndarray
    m_test: np.ndarray  # the chosen models' outputs on the test points
    predictions: dict[str, np.ndarray]  # method → test predictions
    weights: dict[str, np.ndarray]  # meva / meea / inverse_variance / average → α on the test points (n × m)
    train_mse: dict[str, float]
    test_mse: dict[str, float]
    model_test_mse: dict[str, float]
    best_model: str
    iterations: dict[str, int]
    map_rows: np.ndarray | None = None
    map_shape: tuple[int, ...] | None = None
    notes: str = ""
    parameters: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # MEVA/MEEA fitted coefficients

    def to_json(self) -> dict:
        return {"problem": self.problem, "models": self.model_names, "n_train": self.n_train,
                "train_unit": self.train_unit, "n_train_rows": self.n_train_rows, "n_test_rows": int(len(self.y_test)),
                "test_mse": _rounded(self.test_mse), "train_mse": _rounded(self.train_mse),
                "model_test_mse": _rounded(self.model_test_mse), "best_single_model": self.best_model,
                "meva_beats_meea": bool(self.test_mse["meva"] < self.test_mse["meea"]),
                "meva_beats_best_single": bool(self.test_mse["meva"] < self.test_mse["best_single"]),
                "lbfgs_iterations": self.iterations, "notes": self.notes,
                "device": "cpu (numpy / scipy L-BFGS)"}


def _rounded(d: dict[str, float]) -> dict[str, float]:
    return {k: float(f"{v:.6g}") for k, v in d.items()}


def _design(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The estimators' X: the inputs the weight functions see, then one column per model's output."""
    return np.hstack([x, m])


def fit_methods(split, columns: list[int], request, cancel: CancelToken | None = None,
                on_iteration=None) -> Iterator[tuple[str, object]]:
    """Each method fitted on the split's training data, in METHODS order: yields (method, fitted estimator or the
    best model's column)."""
    from .baselines import ColumnModel, InverseVarianceRegressor, best_single, stacking, voting
    from .estimators import MEEARegressor, MEVARegressor

    d = split.x_train.shape[1]
    X = _design(split.x_train, split.m_train[:, columns])
    y = split.y_train
    models = [(split.model_names[c], ColumnModel(d + i)) for i, c in enumerate(columns)]
    prefit = [(n, ColumnModel(d + i).fit(X, y)) for i, (n, _) in enumerate(models)]
    settings = dict(split.aggregator, feature_columns=list(range(d)), regularization=request.regularization,
                    max_iter=request.max_iter, random_state=request.seed, cv="prefit")
    for method in METHODS:
        raise_if_cancelled(cancel)
        if method in ("meva", "meea"):
            cls = MEVARegressor if method == "meva" else MEEARegressor
            est = cls(prefit, **settings)
            yield method, est.fit(X, y, callback=(lambda i, m=method: on_iteration(m, i)) if on_iteration else None)
        elif method == "stacking":
            yield method, stacking(models, cv=min(5, len(y))).fit(X, y)
        elif method == "average":
            yield method, voting(models).fit(X, y)
        elif method == "inverse_variance":
            yield method, InverseVarianceRegressor(prefit).fit(X, y)
        else:
            yield method, best_single(split.m_train[:, columns], y)


def aggregate(request: AggregateRequest, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | AggregateResult]:
    """The run's progress events, then its :class:`AggregateResult`."""
    from .problems import make_split

    names = chosen_models(request.problem, request.models)
    yield ProgressEvent(0.02, f"{request.problem}: solving / loading the models' outputs")
    split = make_split(request.problem, request.n_train, request.seed)
    columns = [split.model_names.index(n) for n in names]
    raise_if_cancelled(cancel)
    X_test = _design(split.x_test, split.m_test[:, columns])
    X_train = _design(split.x_train, split.m_train[:, columns])
    m_test, m_train = split.m_test[:, columns], split.m_train[:, columns]
    progress: list[ProgressEvent] = []

    def on_iteration(method: str, i: int) -> None:
        raise_if_cancelled(cancel)  # a Stop ends L-BFGS at its next iteration
        if i % 25 == 0:
            start = 0.1 if method == "meva" else 0.5
            progress.append(ProgressEvent(start + 0.4 * min(1.0, i / request.max_iter), f"{method}: L-BFGS iteration {i}"))

    predictions, weights, train_mse, test_mse, iterations, parameters = {}, {}, {}, {}, {}, {}
    best = 0
    fits = fit_methods(split, columns, request, cancel, on_iteration)
    for method, fitted in fits:
        yield from progress
        progress.clear()
        if method == "best_single":
            best = fitted
            pred_test, pred_train = m_test[:, best], m_train[:, best]
            weights[method] = np.eye(len(columns))[np.full(len(m_test), best)]
        else:
            pred_test, pred_train = fitted.predict(X_test), fitted.predict(X_train)
            if method in ("meva", "meea"):
                weights[method] = fitted.aggregation_weights(X_test)
                iterations[method] = fitted.n_iter_
                parameters[method] = {"dual_coef": fitted.dual_coef_, "intercept": fitted.intercept_,
                                      "centers_x": fitted.centers_x_, "centers_m": fitted.centers_m_}
            elif method == "inverse_variance":
                weights[method] = np.tile(fitted.weights_, (len(m_test), 1))
            elif method == "average":
                weights[method] = np.full_like(m_test, 1.0 / len(columns))
        predictions[method] = pred_test
        test_mse[method] = float(((pred_test - split.y_test) ** 2).mean())
        train_mse[method] = float(((pred_train - split.y_train) ** 2).mean())
        yield ProgressEvent(0.9 if method == "meea" else 0.95, f"{method}: test MSE {test_mse[method]:.4g}")
    model_mse = {n: float(((m_test[:, i] - split.y_test) ** 2).mean()) for i, n in enumerate(names)}
    yield AggregateResult(
        request=request, problem=request.problem, model_names=names, feature_names=split.feature_names,
        kind=split.kind, train_unit=split.train_unit, n_train=_units(split, request), n_train_rows=len(split.y_train),
        x_test=split.x_test, y_test=split.y_test, m_test=m_test, predictions=predictions, weights=weights,
        train_mse=train_mse, test_mse=test_mse, model_test_mse=model_mse, best_model=names[best],
        iterations=iterations, map_rows=split.map_rows, map_shape=split.map_shape, notes=split.notes,
        parameters=parameters)


def _units(split, request) -> int:
    """The training-set size actually used, in the problem's unit (a PDE's pool caps it)."""
    from .problems import problem_module

    cap = getattr(problem_module(split.problem), "MAX_TRAIN", None)
    return int(min(request.n_train, cap)) if cap is not None else int(request.n_train)


@dataclass
class SweepResult:
    request: SweepRequest
    sizes: list[int]
    test_mse: dict[str, list[float]]  # method → median over seeds, per size
    train_mse: dict[str, list[float]]
    train_unit: str

    def to_json(self) -> dict:
        return {"problem": self.request.problem, "sizes": self.sizes, "train_unit": self.train_unit,
                "test_mse_median": self.test_mse, "train_mse_median": self.train_mse, "seeds": self.request.seeds}


def sweep_sizes(largest: int) -> list[int]:
    sizes, n = [], 4
    while n < largest:
        sizes.append(n)
        n *= 2
    return sizes + [largest]


def sweep(request: SweepRequest, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | SweepResult]:
    """MEVA, MEEA, the average and the best single model at training sets from 4 up to ``largest``."""
    sizes = sweep_sizes(request.largest)
    shown = ("meva", "meea", "average", "best_single")
    test = {m: [] for m in shown}
    train = {m: [] for m in shown}
    unit = ""
    total = len(sizes) * request.seeds
    for si, n in enumerate(sizes):
        per_test = {m: [] for m in shown}
        per_train = {m: [] for m in shown}
        for s in range(request.seeds):
            raise_if_cancelled(cancel)
            yield ProgressEvent((si * request.seeds + s) / total, f"training-set size {n}, seed {request.seed + s}")
            run = AggregateRequest(problem=request.problem, models=request.models, n_train=n, seed=request.seed + s)
            result = None
            for item in aggregate(run, cancel):
                if isinstance(item, AggregateResult):
                    result = item
            unit = result.train_unit
            for m in shown:
                per_test[m].append(result.test_mse[m])
                per_train[m].append(result.train_mse[m])
        for m in shown:
            test[m].append(float(np.median(per_test[m])))
            train[m].append(float(np.median(per_train[m])))
    yield SweepResult(request=request, sizes=sizes, test_mse=test, train_mse=train, train_unit=unit)
