"""Viscous Burgers u_t + u·u_x = ν·u_xx on the periodic interval [0, 2π), ν = 0.05, read at t = 1, from random
initial conditions u0 = Σ_{k=1..3} a_k sin(kx + φ_k) (a_k ~ N(0, 1)/k, φ_k ~ U[0, 2π)), which steepen into shocks.
The reference is a dealiased pseudo-spectral solve on 256 points (RK4, dt = 1/2000). Four models of different
strengths, each run here:

- first-order upwind (Godunov) finite volumes on 64 cells — smears the shocks,
- Lax–Wendroff (Richtmyer two-step) on 64 points — oscillates behind them,
- a coarse pseudo-spectral solve on 32 modes, Fourier-interpolated to 64 points — rings (Gibbs),
- a kernel (GP-mean) operator u0 ↦ u(·, 1) trained here on 100 other solved initial conditions.

The target grid has 64 points. ``n_train`` counts initial conditions; 16 random points of each training solution
are the aggregators' training data, every point of 30 other solutions the test data. The weight functions see
(x, u0(x)) and the models' outputs."""

from __future__ import annotations

from functools import cache

import numpy as np

from backends.aggregate.catalog import MODELS as CATALOG

from . import Split, shipped_pool

MODELS = CATALOG["burgers"]
NU, T, N_GRID = 0.05, 1.0, 64
POOL, N_TEST, POINTS_PER_SOLUTION, N_OPERATOR_TRAIN = 120, 30, 16, 100
MAX_TRAIN = POOL - N_TEST


def grid(n: int) -> np.ndarray:
    return 2 * np.pi * np.arange(n) / n


def initial(params: np.ndarray, x: np.ndarray) -> np.ndarray:
    """params: B × 3 × 2 (amplitude, phase) → B × len(x)."""
    k = np.arange(1, 4)
    return (params[:, :, 0, None] * np.sin(k[None, :, None] * x[None, None, :] + params[:, :, 1, None])).sum(1)


def draw_params(rng: np.random.Generator, count: int) -> np.ndarray:
    amp = rng.normal(size=(count, 3)) / np.arange(1, 4)
    return np.stack([amp, rng.uniform(0, 2 * np.pi, size=(count, 3))], -1)


def spectral(u0: np.ndarray, dt: float) -> np.ndarray:
    """Pseudo-spectral RK4 with the 2/3 rule, batched over rows; the solution at T on the same points."""
    n = u0.shape[1]
    k = np.fft.rfftfreq(n, 1.0 / n)
    keep = k < n / 3
    lin = -NU * k**2

    def rhs(uh):
        u = np.fft.irfft(uh * keep, n)
        return -0.5j * k * np.fft.rfft(u * u) * keep + lin * uh

    uh = np.fft.rfft(u0)
    for _ in range(int(round(T / dt))):
        k1 = rhs(uh)
        k2 = rhs(uh + 0.5 * dt * k1)
        k3 = rhs(uh + 0.5 * dt * k2)
        k4 = rhs(uh + dt * k3)
        uh = uh + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.fft.irfft(uh, n)


def upwind(u0: np.ndarray, dt: float = 0.01) -> np.ndarray:
    """Godunov fluxes for u²/2, central differences for the viscous term, forward Euler."""
    u = u0.copy()
    dx = 2 * np.pi / u.shape[1]
    for _ in range(int(round(T / dt))):
        ul, ur = u, np.roll(u, -1, 1)  # the states either side of the face i+½
        f = np.where(ul > ur, np.maximum(ul**2, ur**2),
                     np.where((ul < 0) & (ur > 0), 0.0, np.minimum(ul**2, ur**2))) / 2
        u = u - dt / dx * (f - np.roll(f, 1, 1)) + NU * dt / dx**2 * (np.roll(u, -1, 1) - 2 * u + np.roll(u, 1, 1))
    return u


def lax_wendroff(u0: np.ndarray, dt: float = 0.01) -> np.ndarray:
    """Richtmyer two-step Lax–Wendroff for u²/2, plus central viscous differences."""
    u = u0.copy()
    dx = 2 * np.pi / u.shape[1]
    for _ in range(int(round(T / dt))):
        up = np.roll(u, -1, 1)
        half = 0.5 * (u + up) - dt / (2 * dx) * (up**2 - u**2) / 2
        fh = half**2 / 2
        u = u - dt / dx * (fh - np.roll(fh, 1, 1)) + NU * dt / dx**2 * (up - 2 * u + np.roll(u, 1, 1))
    return u


def fourier_upsample(u: np.ndarray, n: int) -> np.ndarray:
    m = u.shape[1]
    uh = np.fft.rfft(u)
    out = np.zeros((u.shape[0], n // 2 + 1), complex)
    out[:, : m // 2] = uh[:, : m // 2]
    return np.fft.irfft(out, n) * (n / m)


def reference(params: np.ndarray) -> np.ndarray:
    fine = spectral(initial(params, grid(256)), dt=1 / 2000)
    return fine[:, :: 256 // N_GRID]


@cache
def operator():
    """The kernel operator u0 ↦ u(·, T), fitted here on N_OPERATOR_TRAIN reference solutions (seed 1)."""
    from sklearn.kernel_ridge import KernelRidge

    params = draw_params(np.random.default_rng(1), N_OPERATOR_TRAIN)
    u0, uT = initial(params, grid(N_GRID)), reference(params)
    gamma = 1.0 / np.median(((u0[:, None] - u0[None]) ** 2).sum(-1))
    return KernelRidge(kernel="rbf", gamma=gamma, alpha=1e-3).fit(u0, uT)


def solve_all(params: np.ndarray) -> np.ndarray:
    """Every model's solution on the target grid: B × N_GRID × m."""
    u0 = initial(params, grid(N_GRID))
    return np.stack([upwind(u0), lax_wendroff(u0), fourier_upsample(spectral(initial(params, grid(32)), 0.01), N_GRID),
                     operator().predict(u0)], -1)


@cache
def pool() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(u0, reference u(·, T), model outputs) on the target grid for POOL initial conditions drawn once (seed 0);
    read from the shipped asset when it is there (``training/aggregate_pdes.py`` made it by :func:`solve_pool`)."""
    shipped = shipped_pool("burgers")
    if shipped is not None:
        return shipped["u0"], shipped["exact"], shipped["outputs"]
    return solve_pool()


def solve_pool() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    params = draw_params(np.random.default_rng(0), POOL)
    return initial(params, grid(N_GRID)), reference(params), solve_all(params)


def make_split(n_train: int, seed: int) -> Split:
    u0, exact, outputs = pool()
    n_train = min(n_train, MAX_TRAIN)
    rng = np.random.default_rng(seed)
    order = rng.permutation(POOL)
    test, train = order[:N_TEST], order[N_TEST:N_TEST + n_train]
    x = grid(N_GRID)

    def rows(instances, points):
        pairs = list(zip(instances, points, strict=True))
        return (np.concatenate([np.column_stack([x[p], u0[i, p]]) for i, p in pairs]),
                np.concatenate([outputs[i, p] for i, p in pairs]), np.concatenate([exact[i, p] for i, p in pairs]))

    x_tr, m_tr, y_tr = rows(train, [rng.choice(N_GRID, POINTS_PER_SOLUTION, replace=False) for _ in train])
    x_te, m_te, y_te = rows(test, [np.arange(N_GRID)] * len(test))
    return Split(
        problem="burgers", model_names=list(MODELS), feature_names=["x", "u0(x)"],
        x_train=x_tr, m_train=m_tr, y_train=y_tr, x_test=x_te, m_test=m_te, y_test=y_te,
        kind="field1d", train_unit="initial conditions",
        aggregator={"kernel": "matern32", "length_scale": 1.0, "output_length_scale": "auto"},
        map_rows=np.arange(N_GRID), map_shape=(N_GRID,),
        notes=f"{POINTS_PER_SOLUTION} random points per training solution; {N_TEST} test solutions, "
              f"{N_GRID} points each")
