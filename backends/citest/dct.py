"""DCT (Sun, Yao, Hao, Qiu & Zhang, ICLR 2025): a conditional-independence test on the *latent* variables
when some are only seen discretized, vectorised.

The model: a latent Gaussian vector Z (nonparanormal after a monotone map); a discretized column is one
the authors' code binarises, X̃ⱼ = 1{Zⱼ > hⱼ}. The test runs on the latent correlation matrix Σ:

* **bridge equations** estimate each Σₐᵦ from its two columns: binary–binary solves
  P(Zₐ > hₐ, Zᵦ > hᵦ; σ) = mean(x̃ₐx̃ᵦ) with hⱼ = Φ⁻¹(1 − mean x̃ⱼ); continuous–binary solves
  P(Z꜀ > 0, Zᵦ > hᵦ; σ) = mean(1{x꜀ ≥ 0}·x̃ᵦ); continuous–continuous is Pearson's r;
* each estimate's **influence** ξᵢ comes from M-estimation: the first entry of [∂Ψ]⁻¹Ψᵢ, Ψ the pair's
  moment conditions in (σ, hₐ, hᵦ);
* **nodewise regression** β = Σ₋ⱼ,₋ⱼ⁻¹ Σ₋ⱼ,ⱼ: βₖ = 0 ⇔ Ωⱼₖ = 0 ⇔ Zⱼ ⊥ Zₖ | the rest; its delta-method
  variance aᵀE[ξξᵀ]a gives z = √n β̂ₖ / √var, compared with N(0, 1). An empty conditioning set tests
  σ = 0 with the pair's sandwich variance.

What follows the authors' linked code (boyangaaaaa/DCT, ``DisTestUtil.py``), read for its facts:
columns with at most 5 distinct values are binarised at their mean (x ≥ mean → 1), others are continuous;
a 1e-4 ridge on ∂Ψ for every pair that is not binary–binary in the conditional test (none in the marginal
one); βₖ set to 0 in the variance's weights (the null). Where this differs: continuous columns are
standardised here (the authors' mixed threshold 0 and unit-variance moment assume it; on standardised input
nothing changes); a binary column's Σⱼⱼ is 1 and its ξⱼⱼ is 0 (their root finder stops ~1e-5 short of 1,
where ξⱼⱼ → 0 anyway); orthant probabilities come from Owen's T, not Genz's Monte-Carlo-free Fortran
``mvnun`` that SciPy removed. ``tests/backends/citest/test_authors_fixture.py`` checks the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri
from scipy.stats import norm

from backends.common.errors import InputError

from .bvn import density, solve_correlation

MAX_BINARISED_LEVELS = 5  # the authors' rule: ≤ 5 distinct values → binarised at the mean
RIDGE = 1e-4  # the authors' ridge on ∂Ψ of non-binary–binary pairs, conditional test only
SIGMA_EDGE = 1.0 - 1e-6  # a bridge root is kept within ±(1 − 1e-6)


def binarise_like_authors(X: np.ndarray, discrete=None) -> tuple[np.ndarray, np.ndarray]:
    """(columns as DCT sees them, which are binary): a discretized column becomes 1{x ≥ mean}, any other is
    standardised (mean 0, variance 1). Which are discretized: ``discrete`` (one flag per column) where the
    caller knows, else the authors' rule (≤ 5 distinct values). A constant column is refused (it says nothing)."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] < 2:
        raise InputError("DCT needs a table with at least two columns.")
    if not np.isfinite(X).all():
        raise InputError("The data holds missing or infinite values; DCT needs every value.")
    out = np.empty_like(X)
    binary = np.zeros(X.shape[1], dtype=bool)
    for j in range(X.shape[1]):
        col = X[:, j]
        levels = np.unique(col).size
        if levels < 2:
            raise InputError(f"Column {j} is constant: it cannot be tested (drop it).")
        if (levels <= MAX_BINARISED_LEVELS) if discrete is None else bool(discrete[j]):
            out[:, j] = (col >= col.mean()).astype(float)
            binary[j] = True
            if np.unique(out[:, j]).size < 2:  # cannot happen for ≥ 2 levels, kept as a guard
                raise InputError(f"Column {j} is constant once binarised.")
        else:
            out[:, j] = (col - col.mean()) / col.std()
    return out, binary


@dataclass
class Bridge:
    """Every pair's latent-correlation estimate and its per-sample influence (the expensive part, done once;
    each CI test then only slices it)."""

    sigma: np.ndarray  # (p, p) latent correlation estimate Σ̂
    xi: np.ndarray  # (n, p, p) influence of each Σ̂ₐᵦ, with the conditional test's ridge
    marginal_var: np.ndarray  # (p, p) sandwich variance of √n(σ̂ₐᵦ − σₐᵦ), no ridge (the marginal test)
    binary: np.ndarray  # (p,) which columns DCT binarised

    @property
    def n(self) -> int:
        return self.xi.shape[0]


def estimate_bridge(X: np.ndarray, discrete=None) -> Bridge:
    """Σ̂, ξ and the marginal variances of the data ``X`` (n × p, raw observed columns); ``discrete`` as in
    :func:`binarise_like_authors`."""
    data, binary = binarise_like_authors(X, discrete)
    n, p = data.shape
    sigma = np.eye(p)
    xi = np.zeros((n, p, p))
    xi0 = np.zeros((n, p, p))
    b_idx, c_idx = np.flatnonzero(binary), np.flatnonzero(~binary)

    # binary–binary
    a, b = np.triu_indices(p, 1)
    bb = binary[a] & binary[b]
    if bb.any():
        a1, b1 = a[bb], b[bb]
        prod = data[:, a1] * data[:, b1]
        tau, pa, pb = _smoothed(data[:, a1], data[:, b1])
        ha, hb = ndtri(1.0 - pa), ndtri(1.0 - pb)
        s = _clip(solve_correlation(ha, hb, tau))
        sigma[a1, b1] = sigma[b1, a1] = s
        root = np.sqrt(1 - s * s)
        g11 = -density(ha, hb, s)
        g12 = norm.pdf(ha) * ndtr(-(hb - s * ha) / root)
        g13 = norm.pdf(hb) * ndtr(-(ha - s * hb) / root)
        g22, g33 = norm.pdf(ha), norm.pdf(hb)
        v = ((prod - tau) / g11 - g12 * (data[:, a1] - pa) / (g11 * g22)
             - g13 * (data[:, b1] - pb) / (g11 * g33))
        xi[:, a1, b1] = xi[:, b1, a1] = v  # no ridge on binary–binary pairs, in either test
        xi0[:, a1, b1] = xi0[:, b1, a1] = v

    # continuous–binary (the continuous column's threshold is 0)
    if b_idx.size and c_idx.size:
        cc, bb2 = np.meshgrid(c_idx, b_idx, indexing="ij")
        cc, bb2 = cc.ravel(), bb2.ravel()
        ind = (data[:, cc] >= 0) * data[:, bb2]
        tau, _, pb = _smoothed((data[:, cc] >= 0).astype(float), data[:, bb2])
        hb = ndtri(1.0 - pb)
        s = _clip(solve_correlation(np.zeros(cc.size), hb, tau))
        sigma[cc, bb2] = sigma[bb2, cc] = s
        root = np.sqrt(1 - s * s)
        psi1, psi2 = ind - tau, data[:, bb2] - pb
        g12 = norm.pdf(hb) * ndtr(s * hb / root)
        for ridge, target in ((RIDGE, xi), (0.0, xi0)):
            g11 = -density(0.0, hb, s) + ridge
            g22 = norm.pdf(hb) + ridge
            v = psi1 / g11 - g12 * psi2 / (g11 * g22)
            target[:, cc, bb2] = target[:, bb2, cc] = v

    # continuous–continuous (Pearson on standardised columns), the diagonal included
    if c_idx.size:
        xc = data[:, c_idx]
        corr = (xc.T @ xc) / n - np.outer(xc.mean(0), xc.mean(0))
        np.fill_diagonal(corr, 1.0)
        sigma[np.ix_(c_idx, c_idx)] = np.where(np.eye(c_idx.size, dtype=bool), 1.0, corr)
        psi = xc[:, :, None] * xc[:, None, :] - np.outer(xc.mean(0), xc.mean(0)) - sigma[np.ix_(c_idx, c_idx)]
        xi[:, c_idx[:, None], c_idx[None, :]] = psi / (-1.0 + RIDGE)
        xi0[:, c_idx[:, None], c_idx[None, :]] = -psi

    return Bridge(sigma=sigma, xi=xi, marginal_var=(xi0 ** 2).mean(0), binary=binary)


@dataclass(frozen=True)
class DCTResult:
    """One test's numbers: the statistic's estimate (β̂ₖ or σ̂), its variance, z and the two-sided p-value."""

    estimate: float
    variance: float
    z: float
    p_value: float


def conditional_test(bridge: Bridge, x: int, y: int, given: list[int] | tuple[int, ...]) -> DCTResult:
    """DCT of X ⊥ Y | S on the latent variables: nodewise regression of X on (Y, S), βᵧ = 0."""
    given = list(given)
    if not given:
        return marginal_test(bridge, x, y)
    others = [y, *given]
    theta = _inverse(bridge.sigma[np.ix_(others, others)])
    beta = theta @ bridge.sigma[others, x]
    b_null = beta.copy()
    b_null[0] = 0.0
    xi_oo = bridge.xi[:, others][:, :, others]
    xi_ox = bridge.xi[:, others, x]
    row = theta[0]
    score = -np.einsum("ivq,v,q->i", xi_oo, row, b_null) + xi_ox @ row
    var = float(np.mean(score ** 2))
    return _result(float(beta[0]), var, bridge.n)


def marginal_test(bridge: Bridge, x: int, y: int) -> DCTResult:
    """DCT of X ⊥ Y (no conditioning): σ̂ₓᵧ against its sandwich variance."""
    return _result(float(bridge.sigma[x, y]), float(bridge.marginal_var[x, y]), bridge.n)


def dct_pvalue(X: np.ndarray, x: int, y: int, given=(), discrete=None) -> float:
    """The DCT p-value of X_x ⊥ X_y | X_given on the raw observed table (only the columns it needs)."""
    cols = [x, y, *given]
    bridge = estimate_bridge(np.asarray(X)[:, cols], None if discrete is None else np.asarray(discrete)[cols])
    return conditional_test(bridge, 0, 1, list(range(2, len(cols)))).p_value


def _smoothed(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean uv, mean u, mean v) of 0/1 columns paired up; where a pair's 2×2 table has an empty cell, with
    half a count added to every cell (Haldane–Anscombe). The authors' code has no such case: an empty cell puts
    the bridge's root at σ = ±1, where ∂Ψ is singular and their variance comes out infinite or NaN."""
    n = u.shape[0]
    n11 = (u * v).sum(0)
    n1_, n_1 = u.sum(0), v.sum(0)
    cells = np.stack([n11, n1_ - n11, n_1 - n11, n - n1_ - n_1 + n11])
    empty = (cells == 0).any(0)
    tau = np.where(empty, (n11 + 0.5) / (n + 2), n11 / n)
    pu = np.where(empty, (n1_ + 1) / (n + 2), n1_ / n)
    pv = np.where(empty, (n_1 + 1) / (n + 2), n_1 / n)
    return tau, pu, pv


def _clip(s: np.ndarray) -> np.ndarray:
    """A root at the end of [−1, 1] (a frequency no correlation reaches) kept just inside, where ∂Ψ exists."""
    return np.clip(s, -SIGMA_EDGE, SIGMA_EDGE)


def _result(estimate: float, var: float, n: int) -> DCTResult:
    if not np.isfinite(var) or var <= 0:  # a degenerate pair: no evidence either way, never a rejection
        z = 0.0
    else:
        z = estimate * np.sqrt(n) / np.sqrt(var)
    return DCTResult(estimate=estimate, variance=var, z=float(z), p_value=float(2 * norm.sf(abs(z))))


def _inverse(m: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.inv(m)
    except np.linalg.LinAlgError:
        return np.linalg.pinv(m)
