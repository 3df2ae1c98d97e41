"""scikit-learn's diabetes data (442 patients, 10 features, disease progression after a year; it ships with
scikit-learn, so it works offline). As in the paper's Boston-housing notebook: six scikit-learn regressors with
default settings (linear, tree, random forest, SVR, k-NN, gradient boosting) are fitted on a base split of z-scored
features; the aggregators learn from a separate split (n_train rows) and are scored on held-out rows."""

from __future__ import annotations

from functools import cache

import numpy as np

from backends.aggregate.catalog import MODELS as CATALOG

from . import Split

MODELS = CATALOG["diabetes"]
N_BASE = 200  # rows the six models are fitted on
N_TEST = 100
MAX_TRAIN = 442 - N_BASE - N_TEST  # 142 rows left for the aggregators


@cache
def _data() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    return X, y


def _models(seed: int):
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
    from sklearn.linear_model import LinearRegression
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.svm import SVR
    from sklearn.tree import DecisionTreeRegressor

    return [LinearRegression(), DecisionTreeRegressor(random_state=seed), RandomForestRegressor(random_state=seed),
            SVR(), KNeighborsRegressor(), GradientBoostingRegressor(random_state=seed)]


def make_split(n_train: int, seed: int) -> Split:
    X, y = _data()
    n_train = min(n_train, MAX_TRAIN)
    order = np.random.default_rng(seed).permutation(len(y))
    base, test, agg = order[:N_BASE], order[N_BASE:N_BASE + N_TEST], order[N_BASE + N_TEST:][:n_train]
    mu, sd = X[base].mean(0), X[base].std(0)
    Z = (X - mu) / sd
    outputs = np.column_stack([m.fit(Z[base], y[base]).predict(Z) for m in _models(seed)])
    return Split(
        problem="diabetes", model_names=list(MODELS), feature_names=[f"x{i}" for i in range(X.shape[1])],
        x_train=Z[agg], m_train=outputs[agg], y_train=y[agg], x_test=Z[test], m_test=outputs[test], y_test=y[test],
        kind="tabular", train_unit="rows",
        # the Boston notebook's kernel: Matérn 3/2 (ℓ = 0.5) on z-scored x + Matérn 3/2 on the outputs
        aggregator={"kernel": "matern32", "length_scale": 0.5, "output_length_scale": "auto"},
        notes=f"models fitted on {N_BASE} rows; aggregators on n_train of the other {MAX_TRAIN}; "
              f"tested on {N_TEST} rows")
