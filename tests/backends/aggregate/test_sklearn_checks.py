"""MEVA and MEEA are scikit-learn estimators by scikit-learn's own checks, so they drop into pipelines and searches."""

from sklearn.linear_model import LinearRegression
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from backends.aggregate.estimators import MEEARegressor, MEVARegressor


def _models():
    return [("linear", LinearRegression()), ("tree", DecisionTreeRegressor(max_depth=3, random_state=0))]


@parametrize_with_checks([MEVARegressor(_models(), cv=3, max_iter=30, random_state=0),
                          MEEARegressor(_models(), cv=3, max_iter=30, random_state=0)])
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)
