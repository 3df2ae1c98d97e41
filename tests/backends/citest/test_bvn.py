"""The bivariate-normal orthant that replaces SciPy's removed ``mvn``: exact against quadrature, inverted by the
bridge solver."""

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import norm

from backends.citest.bvn import solve_correlation, upper_orthant


def by_quadrature(h, k, rho):
    s = np.sqrt(1 - rho * rho)
    return integrate.quad(lambda x: norm.pdf(x) * norm.sf((k - rho * x) / s), h, np.inf, epsabs=1e-13)[0]


@pytest.mark.parametrize(("h", "k", "rho"), [(0.3, -0.5, 0.4), (0.0, 0.7, -0.6), (0.5, 0.0, 0.9), (0.0, 0.0, 0.3),
                                             (-1.2, -0.4, -0.95), (1.5, 1.4, 0.99), (-0.8, 1.1, 0.0)])
def test_orthant_matches_quadrature(h, k, rho):
    assert upper_orthant(h, k, rho) == pytest.approx(by_quadrature(h, k, rho), abs=1e-12)


def test_solver_inverts_the_orthant_for_arrays():
    rng = np.random.default_rng(1)
    h, k, rho = rng.uniform(-1.5, 1.5, 50), rng.uniform(-1.5, 1.5, 50), rng.uniform(-0.97, 0.97, 50)
    h[:5] = 0.0  # the mixed bridge's threshold on a continuous variable
    assert np.allclose(solve_correlation(h, k, upper_orthant(h, k, rho)), rho, atol=1e-9)


def test_unreachable_frequency_ends_at_the_bound():
    assert solve_correlation(0.2, 0.3, 0.99) == pytest.approx(1.0, abs=1e-12)
    assert solve_correlation(0.2, 0.3, 0.0) == pytest.approx(-1.0, abs=1e-12)
