"""MEVA and MEEA as scikit-learn estimators: point-wise linear aggregates M_A(x) = Σ_i α_i(x) M_i(x) with
α_i(x) ≥ 0 and Σ_i α_i(x) = 1, fitted on the models' outputs as ``StackingRegressor`` fits its final estimator.

- :class:`MEVARegressor` (minimal empirical variance, the paper's method): one error estimate per model,
  ê_i(x) = exp(g_i(x)) with g = K(x, X_c)V + b, fitted by L-BFGS on mean((ê_i − (y − M_i)²)²) + λ·ΣV²; then
  α = softmax(−g), i.e. α_i ∝ 1/ê_i — the minimal-variance weights C⁻¹1/(1ᵀC⁻¹1) for a diagonal error
  covariance C(x).
- :class:`MEEARegressor` (minimal empirical error, the paper's foil): α = softmax(K(x, X_c)V + b) fitted by
  L-BFGS on mean((αᵀM − y)²) + λ·mean(V²), i.e. regressing y on the models' outputs point-wise.

Both take ``estimators=[(name, model), ...]``; ``cv="prefit"`` uses fitted models as they are (the PDE solvers),
an integer fits clones on cross-validation folds for the aggregation data and then on all of it (as stacking).
The kernel is the paper's (Matérn 3/2 on standardised x, plus Matérn 3/2 on the models' outputs with length
½·mean|y_i − y_j|); on more than ``max_centers`` points the weight functions are expanded on a random subset of
the points (a Nyström-style restriction, for CPU cost; the loss still sums over every point).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.model_selection import cross_val_predict
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from .kernels import KERNELS, weight_kernel

EXP_CLIP = 40.0  # the exp link overflows in float arithmetic beyond this (a pitfall of the published code)


class _PointwiseAggregator(RegressorMixin, BaseEstimator):
    """What MEVA and MEEA share: the models' outputs, standardisation, the kernel and the weights α(x)."""

    def __init__(self, estimators=None, *, cv=5, feature_columns=None, kernel="matern32", length_scale=1.0,
                 output_length_scale="auto", kernel_offset=0.0, regularization=0.1, max_centers=400,
                 max_iter=500, random_state=None):
        self.estimators = estimators
        self.cv = cv
        self.feature_columns = feature_columns
        self.kernel = kernel
        self.length_scale = length_scale
        self.output_length_scale = output_length_scale
        self.kernel_offset = kernel_offset
        self.regularization = regularization
        self.max_centers = max_centers
        self.max_iter = max_iter
        self.random_state = random_state

    # --- the models -----------------------------------------------------------------------------------------
    def _check_params(self) -> list[tuple[str, object]]:
        if not self.estimators:
            raise ValueError("estimators must be a non-empty list of (name, regressor) pairs")
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {sorted(KERNELS)}, got {self.kernel!r}")
        if not (self.length_scale > 0 and self.regularization >= 0 and self.max_centers >= 1 and self.max_iter >= 1):
            raise ValueError("length_scale must be > 0, regularization ≥ 0, max_centers and max_iter ≥ 1")
        return list(self.estimators)

    def _fit_models(self, X, y) -> np.ndarray:
        """The models' outputs on the aggregation data (n × m); the fitted models in ``estimators_``."""
        pairs = self._check_params()
        if self.cv == "prefit":
            self.estimators_ = [est for _, est in pairs]
            for est in self.estimators_:
                check_is_fitted(est)
            return self._outputs(X)
        outputs = [cross_val_predict(clone(est), X, y, cv=self.cv) for _, est in pairs]
        self.estimators_ = [clone(est).fit(X, y) for _, est in pairs]
        return np.column_stack(outputs).astype(float)

    def _outputs(self, X) -> np.ndarray:
        return np.column_stack([np.asarray(est.predict(X), dtype=float).ravel() for est in self.estimators_])

    # --- fitting --------------------------------------------------------------------------------------------
    def fit(self, X, y, callback=None):
        """Fit the weight functions on (X, y); ``callback(iteration)`` is called after each L-BFGS iteration (it may
        raise to stop the fit, e.g. a user's Stop). The products here are small: one BLAS thread is as fast alone
        and far faster on a busy machine."""
        self._callback = callback
        with threadpool_limits(limits=1, user_api="blas"):
            return self._fit(X, y)

    def _fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True)
        y = y.astype(float)
        M = self._fit_models(X, y)
        self.y_mean_, self.y_scale_ = float(y.mean()), float(y.std()) or 1.0
        ys, Ms = (y - self.y_mean_) / self.y_scale_, (M - self.y_mean_) / self.y_scale_
        xf = self._features(X)
        self.x_mean_, self.x_scale_ = xf.mean(0), np.where(xf.std(0) > 0, xf.std(0), 1.0)
        xs = (xf - self.x_mean_) / self.x_scale_
        rng = check_random_state(self.random_state)
        centers = np.sort(rng.choice(len(xs), self.max_centers, replace=False)) if len(xs) > self.max_centers \
            else np.arange(len(xs))
        self.centers_x_, self.centers_m_ = xs[centers], Ms[centers]
        self.output_length_scale_ = self._output_length(ys, rng)
        K = self._kernel(xs, Ms)
        V, b = self._optimise(K, ys, Ms, rng)
        self.dual_coef_, self.intercept_ = V, b
        return self

    def _features(self, X) -> np.ndarray:
        return X if self.feature_columns is None else X[:, list(self.feature_columns)]

    def _output_length(self, ys, rng) -> float | None:
        if self.output_length_scale is None:
            return None
        if self.output_length_scale != "auto":
            return float(self.output_length_scale)
        sample = ys if len(ys) <= 2000 else rng.choice(ys, 2000, replace=False)
        spread = float(np.abs(sample[:, None] - sample[None, :]).mean()) / 2
        return spread if spread > 0 else 1.0

    def _kernel(self, xs, Ms) -> np.ndarray:
        return weight_kernel(xs, Ms, self.centers_x_, self.centers_m_, kind=self.kernel,
                             length_scale=self.length_scale, output_length_scale=self.output_length_scale_,
                             offset=self.kernel_offset)

    def _lbfgs(self, loss_and_grad, start: np.ndarray) -> np.ndarray:
        count = [0]

        def step(_):
            count[0] += 1
            if self._callback is not None:
                self._callback(count[0])

        res = minimize(loss_and_grad, start, jac=True, method="L-BFGS-B", callback=step,
                       options={"maxiter": self.max_iter, "maxcor": 10})
        self._callback = None
        self.n_iter_ = int(res.nit)
        return res.x

    # --- prediction -----------------------------------------------------------------------------------------
    def _scores(self, X) -> tuple[np.ndarray, np.ndarray]:
        """(g(x) or the logits, the models' outputs M(x)) at X."""
        check_is_fitted(self, "dual_coef_")
        X = validate_data(self, X, reset=False)
        with threadpool_limits(limits=1, user_api="blas"):
            M = self._outputs(X)
            xs = (self._features(X) - self.x_mean_) / self.x_scale_
            K = self._kernel(xs, (M - self.y_mean_) / self.y_scale_)
            return K @ self.dual_coef_ + self.intercept_, M

    def predict(self, X):
        alpha, M = self._weights_and_outputs(X)
        return (alpha * M).sum(1)

    def aggregation_weights(self, X) -> np.ndarray:
        """α(x): n × m, each row ≥ 0 and summing to one (columns in the order of ``estimators``)."""
        return self._weights_and_outputs(X)[0]

    def model_outputs(self, X) -> np.ndarray:
        """The models' predictions at X (n × m)."""
        check_is_fitted(self, "dual_coef_")
        return self._outputs(validate_data(self, X, reset=False))


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


class MEVARegressor(_PointwiseAggregator):
    """Minimal empirical variance aggregation (MEVA): the models' squared errors are estimated point-wise and
    each model is weighted by the inverse of its estimated error (see the module's docstring)."""

    def _optimise(self, K, ys, Ms, rng):
        n, m = Ms.shape
        nc = K.shape[1]
        e = (ys[:, None] - Ms) ** 2
        self.error_scale_ = float(e.mean()) or 1.0  # α is unchanged by a common scale of the errors
        e = e / self.error_scale_
        lam = self.regularization

        def loss_and_grad(theta):
            V, b = theta[:-m].reshape(nc, m), theta[-m:]
            g = np.clip(K @ V + b, -EXP_CLIP, EXP_CLIP)
            eh = np.exp(g)
            r = eh - e
            loss = (r**2).mean() + lam * (V**2).sum()
            dg = 2.0 * r * eh / r.size
            return loss, np.concatenate([(K.T @ dg + 2 * lam * V).ravel(), dg.sum(0)])

        b0 = np.log(np.maximum(e.mean(0), 1e-12))  # V = 0 (the paper's start): the global inverse-variance weights
        theta = self._lbfgs(loss_and_grad, np.concatenate([np.zeros(nc * m), b0]))
        return theta[:-m].reshape(nc, m), theta[-m:]

    def _weights_and_outputs(self, X):
        g, M = self._scores(X)
        return softmax(-g), M

    def predict_error(self, X) -> np.ndarray:
        """ê_i(x): the estimated squared error of each model at X, in the target's units² (n × m)."""
        g, _ = self._scores(X)
        return np.exp(np.clip(g, -EXP_CLIP, EXP_CLIP)) * self.error_scale_ * self.y_scale_**2


class MEEARegressor(_PointwiseAggregator):
    """Minimal empirical error aggregation (MEEA): the weights regress the target on the models' outputs
    point-wise (softmax weights, so they sum to one as MEVA's do)."""

    def _optimise(self, K, ys, Ms, rng):
        n, m = Ms.shape
        nc = K.shape[1]
        lam = self.regularization

        def loss_and_grad(theta):
            V, b = theta[:-m].reshape(nc, m), theta[-m:]
            a = softmax(K @ V + b)
            pred = (a * Ms).sum(1)
            r = pred - ys
            loss = (r**2).mean() + lam * (theta**2).mean()
            dpred = 2.0 * r / n
            dh = dpred[:, None] * a * (Ms - pred[:, None])
            grad = np.concatenate([(K.T @ dh).ravel(), dh.sum(0)]) + 2 * lam * theta / theta.size
            return loss, grad

        theta = self._lbfgs(loss_and_grad, np.zeros(nc * m + m))  # the plain average to start (see docs)
        return theta[:-m].reshape(nc, m), theta[-m:]

    def _weights_and_outputs(self, X):
        h, M = self._scores(X)
        return softmax(h), M
