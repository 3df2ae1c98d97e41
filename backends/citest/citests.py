"""The three CI tests side by side, as causal-learn tests (``CIT_Base``) so PC can run each one.

* ``dct``: DCT on the latent variables (``.dct``): the bridge estimates are made once per data set and each
  test slices them, where the authors' plug-in rebuilds them per call;
* ``fisherz``: causal-learn's Fisher-z on the observed values (discretized columns as their level codes);
* ``chisq``: causal-learn's chi-square on the observed values; a continuous column is cut into
  ``CHISQ_BINS`` equal-frequency bins first (a contingency test needs categories; on raw continuous values
  every row would be its own category).

Each test checks the run's cancel token before every call and reports it, so PC stops within one test.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from causallearn.utils.cit import CIT, NO_SPECIFIED_PARAMETERS_MSG, CIT_Base, register_ci_test

from backends.common.progress import CancelToken, raise_if_cancelled

from .dct import conditional_test, estimate_bridge

TESTS = ("dct", "fisherz", "chisq")
LABELS = {"dct": "DCT", "fisherz": "Fisher-z", "chisq": "chi-square"}
CHISQ_BINS = 5
MAX_CATEGORIES = 20  # a column with more distinct values is "continuous" for the chi-square test


def chisq_data(X: np.ndarray) -> np.ndarray:
    """The table chi-square sees: continuous columns (more than 20 values) cut into 5 equal-frequency bins."""
    out = np.asarray(X, dtype=float).copy()
    for j in range(out.shape[1]):
        col = out[:, j]
        if np.unique(col).size > MAX_CATEGORIES:
            cuts = np.quantile(col, np.linspace(0, 1, CHISQ_BINS + 1)[1:-1])
            out[:, j] = np.searchsorted(cuts, col, side="right")
    return out


class _Watched(CIT_Base):
    """A causal-learn test that checks the cancel token and counts its calls (``on_test(count)``)."""

    method = ""

    def __init__(self, data, cancel: CancelToken | None = None, on_test: Callable[[int], None] | None = None,
                 **kwargs):
        super().__init__(data, **kwargs)
        self.check_cache_method_consistent(self.method, NO_SPECIFIED_PARAMETERS_MSG)
        self.cancel, self.on_test, self.count = cancel, on_test, 0

    def __deepcopy__(self, memo):  # PC deep-copies its graph, this test included; the test is read-only
        return self

    def __call__(self, X, Y, condition_set=None):
        raise_if_cancelled(self.cancel)
        xs, ys, given, key = self.get_formatted_XYZ_and_cachekey(X, Y, condition_set)
        if key not in self.pvalue_cache:
            self.pvalue_cache[key] = float(self.pvalue(xs[0], ys[0], given))
            self.count += 1
            if self.on_test is not None:
                self.on_test(self.count)
        return self.pvalue_cache[key]

    def pvalue(self, x: int, y: int, given: list[int]) -> float:
        raise NotImplementedError


class DCTTest(_Watched):
    """DCT (as the authors' ``cit.DisTest``: X the smaller index, regressed on Y and S)."""

    method = "iclr25_dct"

    def __init__(self, data, discrete=None, **kwargs):
        super().__init__(data, **kwargs)
        self.assert_input_data_is_valid()
        self.bridge = estimate_bridge(data, discrete)

    def pvalue(self, x, y, given):
        return conditional_test(self.bridge, x, y, given).p_value


class FisherZTest(_Watched):
    method = "iclr25_fisherz"

    def __init__(self, data, **kwargs):
        super().__init__(data, **kwargs)
        self.inner = CIT(np.asarray(data, dtype=float), "fisherz")

    def pvalue(self, x, y, given):
        return self.inner(x, y, given)


class ChisqTest(_Watched):
    method = "iclr25_chisq"

    def __init__(self, data, **kwargs):
        super().__init__(data, **kwargs)
        self.inner = CIT(chisq_data(data), "chisq")

    def pvalue(self, x, y, given):
        return self.inner(x, y, given)


CLASSES = {"dct": DCTTest, "fisherz": FisherZTest, "chisq": ChisqTest}
for _name, _cls in CLASSES.items():
    register_ci_test(_cls.method, _cls)


def method_name(test: str) -> str:
    """The name causal-learn's ``pc(..., indep_test=...)`` knows the test by."""
    return CLASSES[test].method


def pvalues(X: np.ndarray, x: int, y: int, given: list[int], tests=TESTS, discrete=None) -> dict[str, float]:
    """Each test's p-value for X_x ⊥ X_y | X_given on one data set (only the columns it needs)."""
    cols = [x, y, *given]
    sub = np.asarray(X, dtype=float)[:, cols]
    flags = None if discrete is None else np.asarray(discrete)[cols]
    rest = list(range(2, len(cols)))
    out = {}
    for t in tests:
        test = CLASSES[t](sub, discrete=flags) if t == "dct" else CLASSES[t](sub)
        out[t] = conditional_test(test.bridge, 0, 1, rest).p_value if t == "dct" else test(0, 1, rest)
    return out
