"""What practitioners aggregate with today, beside MEVA and MEEA: the best single model, the plain average
(``VotingRegressor``), stacking (``StackingRegressor`` with a ridge on the outputs) and inverse-variance
weighting (constant weights ∝ 1 / each model's mean squared error). :class:`ColumnModel` lets models whose
outputs were computed ahead of time (PDE solvers) take part in any scikit-learn ensemble."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.ensemble import StackingRegressor, VotingRegressor
from sklearn.linear_model import RidgeCV
from sklearn.utils.validation import check_is_fitted, validate_data


class ColumnModel(RegressorMixin, BaseEstimator):
    """A model whose predictions are column ``column`` of X (computed elsewhere, e.g. by a PDE solver)."""

    def __init__(self, column=0):
        self.column = column

    def fit(self, X, y=None):
        X = validate_data(self, X)
        if not 0 <= self.column < X.shape[1]:
            raise ValueError(f"column {self.column} is outside X's {X.shape[1]} columns")
        self.fitted_ = True
        return self

    def predict(self, X):
        check_is_fitted(self, "fitted_")
        return validate_data(self, X, reset=False)[:, self.column].astype(float)


class InverseVarianceRegressor(RegressorMixin, BaseEstimator):
    """Constant weights ∝ 1/MSE_i measured on the fitting data (models used as fitted: ``prefit``)."""

    def __init__(self, estimators=None):
        self.estimators = estimators

    def fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True)
        self.estimators_ = [est for _, est in self.estimators]
        M = self._outputs(X)
        mse = np.maximum(((M - y[:, None]) ** 2).mean(0), 1e-300)
        self.weights_ = (1 / mse) / (1 / mse).sum()
        return self

    def _outputs(self, X):
        return np.column_stack([np.asarray(est.predict(X), float).ravel() for est in self.estimators_])

    def predict(self, X):
        check_is_fitted(self, "weights_")
        return self._outputs(validate_data(self, X, reset=False)) @ self.weights_


def stacking(estimators, cv=5) -> StackingRegressor:
    """scikit-learn's stacking: a ridge (its strength chosen by CV) on cross-validated model outputs."""
    return StackingRegressor([(n, clone(e)) for n, e in estimators], final_estimator=RidgeCV(), cv=cv)


def voting(estimators) -> VotingRegressor:
    """scikit-learn's plain average of the models."""
    return VotingRegressor([(n, clone(e)) for n, e in estimators])


def best_single(outputs: np.ndarray, y: np.ndarray) -> int:
    """The index of the model with the least mean squared error on the fitting data (the choice one makes
    without a test set)."""
    return int(((outputs - y[:, None]) ** 2).mean(0).argmin())
