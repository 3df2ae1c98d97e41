"""MEVA and MEEA on problems whose answer is known: point-wise weights find the model that is right where it is
right, sum to one, and MEEA — not MEVA — is fooled by the paper's pathological case."""

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from backends.aggregate.baselines import ColumnModel, InverseVarianceRegressor
from backends.aggregate.estimators import MEEARegressor, MEVARegressor


def left_right(n: int, seed: int = 0):
    """Model A is exact on x < 0 and noisy on x > 0; model B the other way round."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, n)
    y = np.sin(3 * x)
    a = y + np.where(x < 0, 0.0, 1.0) * rng.normal(0, 0.5, n)
    b = y + np.where(x > 0, 0.0, 1.0) * rng.normal(0, 0.5, n)
    X = np.column_stack([x, a, b])
    models = [("A", ColumnModel(1).fit(X, y)), ("B", ColumnModel(2).fit(X, y))]
    return X, y, models


@pytest.mark.parametrize("cls", [MEVARegressor, MEEARegressor])
def test_pointwise_weights_pick_the_model_that_is_right_where_it_is(cls):
    X, y, models = left_right(200)
    est = cls(models, cv="prefit", feature_columns=[0], output_length_scale=None, max_iter=200,
              random_state=0).fit(X, y)
    Xt, yt, _ = left_right(400, seed=1)
    alpha = est.aggregation_weights(Xt)
    assert alpha.shape == (400, 2) and np.all(alpha >= 0) and np.allclose(alpha.sum(1), 1)
    left, right = Xt[:, 0] < -0.3, Xt[:, 0] > 0.3
    assert alpha[left, 0].mean() > 0.75 and alpha[right, 1].mean() > 0.75
    mse = ((est.predict(Xt) - yt) ** 2).mean()
    single = min(((Xt[:, 1] - yt) ** 2).mean(), ((Xt[:, 2] - yt) ** 2).mean())
    assert mse < 0.5 * single


def test_meva_estimates_each_models_squared_error():
    X, y, models = left_right(300)
    est = MEVARegressor(models, cv="prefit", feature_columns=[0], output_length_scale=None, max_iter=300).fit(X, y)
    grid = np.column_stack([np.linspace(-0.9, 0.9, 7), np.zeros(7), np.zeros(7)])
    err = est.predict_error(grid)  # true: 0 or 0.25 depending on the side
    assert np.all(err[grid[:, 0] > 0.3, 0] > 0.1) and np.all(err[grid[:, 0] < -0.3, 0] < 0.05)


def test_meea_overfits_the_pathological_case_and_meva_does_not():
    """The paper's example 3 (training points only near ±1): MEEA's weights prefer the constant +3 where it fits
    the training data and carry it into the middle."""
    from backends.aggregate.problems import make_split

    s = make_split("pathological", 100, seed=0)
    X, Xt = np.hstack([s.x_train, s.m_train]), np.hstack([s.x_test, s.m_test])
    models = [(n, ColumnModel(1 + i).fit(X, s.y_train)) for i, n in enumerate(s.model_names)]
    errs = {}
    for cls in (MEVARegressor, MEEARegressor):
        est = cls(models, cv="prefit", feature_columns=[0], **s.aggregator, random_state=0).fit(X, s.y_train)
        errs[cls.__name__] = ((est.predict(Xt) - s.y_test) ** 2).mean()
    good = ((s.m_test[:, 0] - s.y_test) ** 2).mean()
    assert errs["MEVARegressor"] < 1.5 * good  # about the noise of the good model
    assert errs["MEEARegressor"] > 3 * errs["MEVARegressor"]


def test_cross_validated_fit_in_a_pipeline_like_stacking():
    from sklearn.datasets import load_diabetes
    from sklearn.neighbors import KNeighborsRegressor

    X, y = load_diabetes(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), MEVARegressor([("lr", LinearRegression()), ("knn", KNeighborsRegressor())],
                                                         cv=3, max_iter=50))
    pipe.fit(X[:300], y[:300])
    assert pipe.score(X[300:], y[300:]) > 0.3
    est = pipe[-1]
    assert len(est.estimators_) == 2 and est.dual_coef_.shape[1] == 2


def test_inverse_variance_weights_favour_the_better_model():
    X, y, models = left_right(200)
    X[:, 2] = y + 1.0  # B now wrong everywhere
    models[1] = ("B", ColumnModel(2).fit(X, y))
    est = InverseVarianceRegressor(models).fit(X, y)
    assert est.weights_[0] > 0.5 and np.isclose(est.weights_.sum(), 1)


def test_a_stop_ends_the_fit_between_iterations():
    X, y, models = left_right(200)
    seen = []

    def stop(i):
        seen.append(i)
        if i == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        MEVARegressor(models, cv="prefit", feature_columns=[0], max_iter=500).fit(X, y, callback=stop)
    assert seen == [1, 2, 3]


def test_bad_settings_are_refused():
    X, y, models = left_right(20)
    with pytest.raises(ValueError, match="non-empty"):
        MEVARegressor([]).fit(X, y)
    with pytest.raises(ValueError, match="kernel"):
        MEVARegressor(models, cv="prefit", kernel="cosine").fit(X, y)
