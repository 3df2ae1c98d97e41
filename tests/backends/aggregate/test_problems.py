"""The problems' solvers are what they claim: the forcing is the solution's Laplacian, the finite differences
converge, the spectral solver converges, Burgers conserves its mean, and the shipped pools are
the solvers' own output."""

import numpy as np

from backends.aggregate.problems import burgers, laplace, make_split


def test_laplace_forcing_is_the_laplacian_of_the_solution():
    p, h = (0.3, 0.6, 0.2, 7.0), 1e-4
    x, y = 0.45, 0.52
    u = laplace.solution
    fd = (u(p, x + h, y) + u(p, x - h, y) + u(p, x, y + h) + u(p, x, y - h) - 4 * u(p, x, y)) / h**2
    assert abs(fd - laplace.forcing(p, x, y)) < 1e-3 * abs(fd)


def test_finite_differences_and_the_spectral_solver_converge():
    p = (0.5, 0.5, 0.4, 1.0)  # wide and gentle
    gx, gy = np.meshgrid(laplace.GRID, laplace.GRID, indexing="ij")
    exact = laplace.solution(p, gx, gy).ravel()
    errs = [np.abs(laplace.fd_solve(p, np.linspace(0, 1, n), np.linspace(0, 1, n)) - exact).max() for n in (9, 17, 33)]
    assert errs[0] > 3 * errs[1] > 9 * errs[2]  # second order
    # DST-I: f does not vanish on the boundary, so the sine series converges algebraically, not spectrally
    spectral = [np.abs(laplace.spectral_solve(p, n) - exact).max() for n in (8, 16, 32)]
    assert spectral[0] > 2 * spectral[1] > 4 * spectral[2] and spectral[1] < 0.1 * np.abs(exact).max()


def test_shipped_pools_are_the_solvers_output():
    params, exact, forcing, outputs = laplace.pool()
    i = 7
    again = laplace.solve_all(tuple(params[i]), seed=i)
    assert np.allclose(again, outputs[i], rtol=1e-4, atol=1e-5)
    gx, gy = np.meshgrid(laplace.GRID, laplace.GRID, indexing="ij")
    assert np.allclose(laplace.solution(params[i], gx, gy).ravel(), exact[i], atol=1e-6)
    u0, bexact, boutputs = burgers.pool()
    assert boutputs.shape == (burgers.POOL, burgers.N_GRID, len(burgers.MODELS))
    assert np.isfinite(boutputs).all()


def test_burgers_conserves_the_mean_and_the_schemes_approach_the_reference():
    params = burgers.draw_params(np.random.default_rng(5), 3)
    u0 = burgers.initial(params, burgers.grid(64))
    ref = burgers.reference(params)
    assert np.allclose(ref.mean(1), u0.mean(1), atol=1e-6)
    for solve in (burgers.upwind, burgers.lax_wendroff):
        out = solve(u0)
        assert np.allclose(out.mean(1), u0.mean(1), atol=1e-6)
        assert ((out - ref) ** 2).mean() < 0.05 * (ref**2).mean()


def test_splits_keep_train_and_test_apart_and_are_seeded():
    a, b = make_split("laplace", 6, seed=3), make_split("laplace", 6, seed=3)
    assert np.array_equal(a.x_train, b.x_train) and len(a.y_train) == 6 * laplace.POINTS_PER_FORCING
    assert len(a.y_test) == laplace.N_TEST * len(laplace.GRID) ** 2
    train_rows = {tuple(r) for r in np.hstack([a.x_train, a.m_train]).round(9)}
    test_rows = {tuple(r) for r in np.hstack([a.x_test, a.m_test]).round(9)}
    assert not train_rows & test_rows  # different forcings
    d = make_split("diabetes", 500, seed=0)
    assert len(d.y_train) == 142 and d.m_train.shape == (142, 6)
