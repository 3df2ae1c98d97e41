"""Poisson's equation Δu = f on the unit square with u = 0 on the boundary, as in the paper's Laplace data:
u = sin(πx)·sin(πy)·sin(M·exp(−|v − μ|²/(2ℓ²))) with μ ~ U[0,1]², ℓ log-uniform on [0.1, 0.5], M ~ U(0, 5π),
and f = Δu (written out below). Five solvers of different strengths, each run here on every forcing:

- two finite-difference solvers on tensor grids that are fine on one half of the square and coarse on the other
  (their errors differ by region, which is what point-wise weights can use),
- a uniform finite-difference solver on a coarse grid,
- a spectral (DST-I) solver with 16×16 modes,
- a Gaussian-process collocation solver (Gaussian kernel σ = 0.1, 200 seeded points, 15% on the boundary).

Each model's solution is read on a 23×23 grid of interior points (the target grid). ``n_train`` counts forcings;
25 random grid points of each training forcing are the aggregators' training data, every grid point of 30 other
forcings the test data. The weight functions see (x, y, f(x, y)) and the models' outputs."""

from __future__ import annotations

from functools import cache

import numpy as np
from scipy.fft import dstn
from scipy.interpolate import RegularGridInterpolator
from scipy.linalg import cho_factor, cho_solve
from scipy.sparse import diags, identity, kron
from scipy.sparse.linalg import spsolve

from backends.aggregate.catalog import MODELS as CATALOG

from . import Split, shipped_pool

MODELS = CATALOG["laplace"]
GRID = np.linspace(0, 1, 25)[1:-1]  # 23 interior points per axis
POOL, N_TEST, POINTS_PER_FORCING = 120, 30, 25
MAX_TRAIN = POOL - N_TEST


# ---- the exact solution and its forcing ----------------------------------------------------------------
def solution(params, x, y):
    mx, my, ell, amp = params
    r2 = (x - mx) ** 2 + (y - my) ** 2
    G = np.exp(-r2 / (2 * ell**2))
    return np.sin(np.pi * x) * np.sin(np.pi * y) * np.sin(amp * G)


def forcing(params, x, y):
    """Δu for u = A·h, A = sin(πx)sin(πy), h = sin(M·G): Δu = hΔA + 2∇A·∇h + AΔh."""
    mx, my, ell, amp = params
    dx, dy = x - mx, y - my
    r2 = dx**2 + dy**2
    G = np.exp(-r2 / (2 * ell**2))
    A = np.sin(np.pi * x) * np.sin(np.pi * y)
    Ax, Ay = np.pi * np.cos(np.pi * x) * np.sin(np.pi * y), np.pi * np.sin(np.pi * x) * np.cos(np.pi * y)
    Gx, Gy = -G * dx / ell**2, -G * dy / ell**2
    lapG = G * (r2 / ell**4 - 2 / ell**2)
    h, hp = np.sin(amp * G), amp * np.cos(amp * G)
    lap_h = hp * lapG - amp**2 * h * (Gx**2 + Gy**2)
    return -2 * np.pi**2 * A * h + 2 * hp * (Ax * Gx + Ay * Gy) + A * lap_h


def draw_params(rng: np.random.Generator):
    return (rng.random(), rng.random(), float(np.exp(rng.uniform(np.log(0.1), np.log(0.5)))),
            rng.uniform(0, 5 * np.pi))


# ---- the solvers ---------------------------------------------------------------------------------------
def _second_difference(nodes: np.ndarray):
    """The 1-D Dirichlet second-difference matrix on the interior of a (non-uniform) grid ``nodes``."""
    h = np.diff(nodes)
    hl, hr = h[:-1], h[1:]
    main = -2 / (hl * hr)
    lower = 2 / (hl * (hl + hr))
    upper = 2 / (hr * (hl + hr))
    return diags([lower[1:], main, upper[:-1]], [-1, 0, 1], format="csr")


def fd_solve(params, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Five-point finite differences on the tensor grid xs × ys (boundary included), read on GRID."""
    D2x, D2y = _second_difference(xs), _second_difference(ys)
    nx, ny = len(xs) - 2, len(ys) - 2
    L = kron(D2x, identity(ny)) + kron(identity(nx), D2y)
    X, Y = np.meshgrid(xs[1:-1], ys[1:-1], indexing="ij")
    u = np.zeros((len(xs), len(ys)))
    u[1:-1, 1:-1] = spsolve(L.tocsc(), forcing(params, X, Y).ravel()).reshape(nx, ny)
    gx, gy = np.meshgrid(GRID, GRID, indexing="ij")
    return RegularGridInterpolator((xs, ys), u, method="cubic")(np.column_stack([gx.ravel(), gy.ravel()]))


def _two_block(fine_left: bool) -> np.ndarray:
    fine, coarse = np.linspace(0, 0.5, 21), np.linspace(0.5, 1, 6)[1:]  # h = 1/40 and 1/10
    nodes = np.concatenate([fine, coarse])
    return nodes if fine_left else np.sort(1 - nodes)


def spectral_solve(params, n: int = 16) -> np.ndarray:
    """DST-I: f sampled on n×n interior points, each sine mode divided by −π²(k² + l²), the series read on GRID."""
    t = np.arange(1, n + 1) / (n + 1)
    X, Y = np.meshgrid(t, t, indexing="ij")
    k = np.arange(1, n + 1)
    coef = _dst_coefficients(forcing(params, X, Y)) / (-(np.pi**2) * (k[:, None] ** 2 + k[None, :] ** 2))
    S = np.sin(np.pi * GRID[:, None] * k[None, :])
    return (S @ coef @ S.T).ravel()


def _dst_coefficients(values: np.ndarray) -> np.ndarray:
    """a_kl with values_ij = Σ a_kl sin(πki/(n+1)) sin(πlj/(n+1))."""
    n = values.shape[0]
    return dstn(values, type=1) / (2 * (n + 1)) ** 2 * 4


def gp_solve(params, seed: int, n: int = 200, sigma: float = 0.1, nugget: float = 1e-7) -> np.ndarray:
    """Gaussian-process collocation: u | (u = 0 on boundary points, Δu = f on interior points), the mean on GRID."""
    rng = np.random.default_rng(seed)
    nb = int(0.15 * n)
    side, pos = rng.integers(0, 4, nb), rng.random(nb)
    bnd = np.column_stack([np.where(side == 0, 0.0, np.where(side == 1, 1.0, pos)),
                           np.where(side == 2, 0.0, np.where(side == 3, 1.0, pos))])
    inner = rng.random((n - nb, 2))
    s2 = sigma**2

    def r2(a, b):
        return ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)

    def k(a, b):
        return np.exp(-r2(a, b) / (2 * s2))

    def lap_k(a, b):  # Δ in either argument (d = 2)
        d = r2(a, b)
        return k(a, b) * (d / s2**2 - 2 / s2)

    def lap_lap_k(a, b):
        d = r2(a, b)
        return k(a, b) * (d**2 / s2**4 - 8 * d / s2**3 + 8 / s2**2)

    K = np.block([[k(bnd, bnd), lap_k(bnd, inner)], [lap_k(inner, bnd), lap_lap_k(inner, inner)]])
    K[np.diag_indices_from(K)] += nugget * np.diag(K)
    rhs = np.concatenate([np.zeros(nb), forcing(params, inner[:, 0], inner[:, 1])])
    gx, gy = np.meshgrid(GRID, GRID, indexing="ij")
    pts = np.column_stack([gx.ravel(), gy.ravel()])
    try:
        coef = cho_solve(cho_factor(K), rhs)
    except np.linalg.LinAlgError:
        coef = np.linalg.lstsq(K, rhs, rcond=1e-12)[0]
    return np.hstack([k(pts, bnd), lap_k(pts, inner)]) @ coef


def solve_all(params, seed: int) -> np.ndarray:
    """Every model's solution on GRID (points × models)."""
    uniform = np.linspace(0, 1, 13)
    return np.column_stack([
        fd_solve(params, _two_block(True), np.linspace(0, 1, 21)),
        fd_solve(params, _two_block(False), np.linspace(0, 1, 21)),
        fd_solve(params, uniform, uniform),
        spectral_solve(params),
        gp_solve(params, seed),
    ])


@cache
def pool() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(parameters, exact u, f, model outputs) on GRID for POOL forcings drawn once (seed 0): P×4, P×G, P×G,
    P×G×m; read from the shipped asset when it is there (``training/aggregate_pdes.py`` made it by
    :func:`solve_pool`)."""
    shipped = shipped_pool("laplace")
    if shipped is not None:
        return shipped["params"], shipped["exact"], shipped["forcing"], shipped["outputs"]
    return solve_pool()


def solve_pool() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    gx, gy = np.meshgrid(GRID, GRID, indexing="ij")
    params = np.array([draw_params(rng) for _ in range(POOL)])
    exact = np.stack([solution(p, gx, gy).ravel() for p in params])
    forcings = np.stack([forcing(p, gx, gy).ravel() for p in params])
    outputs = np.stack([solve_all(p, seed=i) for i, p in enumerate(params)])
    return params, exact, forcings, outputs


def make_split(n_train: int, seed: int) -> Split:
    _, exact, forcings, outputs = pool()
    n_train = min(n_train, MAX_TRAIN)
    rng = np.random.default_rng(seed)
    order = rng.permutation(POOL)
    test, train = order[:N_TEST], order[N_TEST:N_TEST + n_train]
    gx, gy = np.meshgrid(GRID, GRID, indexing="ij")
    xy = np.column_stack([gx.ravel(), gy.ravel()])
    n_grid = len(xy)

    def rows(instances, points):
        x = np.concatenate([np.column_stack([xy[p], forcings[i, p]]) for i, p in zip(instances, points, strict=True)])
        m = np.concatenate([outputs[i, p] for i, p in zip(instances, points, strict=True)])
        y = np.concatenate([exact[i, p] for i, p in zip(instances, points, strict=True)])
        return x, m, y

    train_points = [rng.choice(n_grid, POINTS_PER_FORCING, replace=False) for _ in train]
    x_tr, m_tr, y_tr = rows(train, train_points)
    x_te, m_te, y_te = rows(test, [np.arange(n_grid)] * len(test))
    return Split(
        problem="laplace", model_names=list(MODELS), feature_names=["x", "y", "f(x, y)"],
        x_train=x_tr, m_train=m_tr, y_train=y_tr, x_test=x_te, m_test=m_te, y_test=y_te,
        kind="field2d", train_unit="forcings",
        aggregator={"kernel": "matern32", "length_scale": 1.0, "output_length_scale": "auto"},
        map_rows=np.arange(n_grid), map_shape=(len(GRID), len(GRID)),
        notes=f"{POINTS_PER_FORCING} random grid points per training forcing; {N_TEST} test forcings, "
              f"{len(GRID)}×{len(GRID)} points each")
