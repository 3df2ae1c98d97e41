"""DCT behaves as the paper says where Fisher-z and chi-square do not: a true CI statement among binarised
variables is kept, a false one rejected; and its pieces (binarisation, bridge, influence) are the authors'."""

import numpy as np
import pytest

from backends.citest.citests import pvalues
from backends.citest.dct import binarise_like_authors, conditional_test, estimate_bridge, marginal_test
from backends.citest.graphs import discretize, make_graph, sample_latent
from backends.common.errors import InputError


def chain_data(n, seed, levels=2, which=(0, 1, 2)):
    rng = np.random.default_rng(seed)
    z = sample_latent(make_graph("chain", 3), n, rng)
    return discretize(z, list(which), levels, rng)


def test_conditioning_on_a_binned_middle_variable_fools_fisherz_not_dct():
    X = chain_data(3000, seed=0)
    p = pvalues(X, 0, 2, [1])
    assert p["dct"] > 0.05  # X1 ⊥ X3 | X2 holds in the latent chain
    assert p["fisherz"] < 1e-6 and p["chisq"] < 1e-6  # the binned X2 does not block the path
    assert pvalues(X, 0, 1, [2])["dct"] < 1e-6  # X1 – X2 | X3 is a true dependence: DCT sees it


def test_dct_type1_error_is_near_alpha_on_binarised_chains():
    rejections = [pvalues(chain_data(600, seed), 0, 2, [1], tests=("dct",))["dct"] < 0.05 for seed in range(80)]
    assert 0.0 < np.mean(rejections) < 0.12


def test_authors_binarisation_rule_and_standardisation():
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.integers(0, 5, 200), rng.normal(3, 2, 200), rng.integers(0, 2, 200)]).astype(float)
    data, binary = binarise_like_authors(X)
    assert binary.tolist() == [True, False, True]
    assert set(np.unique(data[:, 0])) == {0.0, 1.0}
    assert np.array_equal(data[:, 0], (X[:, 0] >= X[:, 0].mean()).astype(float))  # at the mean, x ≥ mean → 1
    assert data[:, 1].mean() == pytest.approx(0, abs=1e-12) and data[:, 1].std() == pytest.approx(1)
    _, declared = binarise_like_authors(X, discrete=[False, True, True])  # a caller who knows overrides the rule
    assert declared.tolist() == [False, True, True]


def test_bridge_recovers_the_latent_correlation():
    rng = np.random.default_rng(5)
    z = rng.multivariate_normal([0, 0, 0], [[1, 0.6, -0.3], [0.6, 1, 0.2], [-0.3, 0.2, 1]], 20000)
    X = np.column_stack([(z[:, 0] > 0.4), z[:, 1], (z[:, 2] > -0.3)]).astype(float)
    b = estimate_bridge(X)
    assert b.sigma[0, 1] == pytest.approx(0.6, abs=0.03)  # binary–continuous
    assert b.sigma[0, 2] == pytest.approx(-0.3, abs=0.03)  # binary–binary
    assert b.sigma[1, 2] == pytest.approx(0.2, abs=0.03)
    assert np.allclose(b.xi, b.xi.transpose(0, 2, 1))  # one influence per unordered pair
    assert np.abs(b.xi.mean(0)).max() < 1e-2  # influence terms are centred


def test_empty_cell_and_constant_columns():
    X = np.zeros((100, 2))
    X[:50, 0] = 1
    X[:30, 1] = 1  # X2 = 1 only where X1 = 1: an empty cell, root at σ = 1
    r = marginal_test(estimate_bridge(X), 0, 1)
    assert np.isfinite(r.z) and 0 < r.estimate < 1
    with pytest.raises(InputError, match="constant"):
        estimate_bridge(np.column_stack([np.ones(50), np.arange(50.0)]))


def test_conditional_test_is_the_regression_of_x_on_y_and_s():
    X = chain_data(2000, seed=2, which=(1,))  # X1, X3 continuous: with X2 binned, β of X3 in X1 ~ (X3, X2)
    b = estimate_bridge(X)
    r = conditional_test(b, 0, 2, [1])
    s = b.sigma
    beta = np.linalg.solve(s[np.ix_([2, 1], [2, 1])], s[[2, 1], 0])
    assert r.estimate == pytest.approx(beta[0])
