"""Exact EMD a Stop can end: the network simplex has no callback, so a large one runs in a child process that a
Stop kills (backends/ot/exact.py)."""

import subprocess

import numpy as np
import pytest

from backends.common.errors import Cancelled
from backends.common.progress import CancelToken
from backends.ot import exact
from backends.ot.problems import grid_problem


def _problem(side):
    p = grid_problem(side, "grf_smooth", "grf_smooth", 0, "sqeuclidean")
    return p.a.numpy(), p.b.numpy(), p.C.numpy()


def test_a_large_exact_solve_in_its_child_process_gives_the_in_process_answer():
    a, b, C = _problem(24)  # 576² entries: over the in-process limit
    assert C.size >= exact.IN_PROCESS_BELOW
    here = exact.emd(a, b, C)  # no token: in this process
    child = exact.emd(a, b, C, cancel=CancelToken())
    assert child.cost == pytest.approx(here.cost, rel=1e-12)
    np.testing.assert_allclose(child.plan, here.plan, atol=1e-15)
    assert child.warning == here.warning


class _StopsAfterPolls(CancelToken):
    """A Stop that arrives after the child has started: on the ``polls``-th check."""

    def __init__(self, polls):
        super().__init__()
        self.left = polls

    def raise_if_cancelled(self):
        self.left -= 1
        if self.left <= 0:
            self.cancel("stopped by the user")
        super().raise_if_cancelled()


def test_a_stop_kills_the_exact_solvers_child_process(monkeypatch):
    started = []
    real_popen = subprocess.Popen

    def popen(*args, **kw):
        started.append(real_popen(*args, **kw))
        return started[-1]

    monkeypatch.setattr(exact.subprocess, "Popen", popen)
    a, b, C = _problem(48)  # n = 2,304: the simplex takes seconds, far more than the three polls
    with pytest.raises(Cancelled):
        exact.emd(a, b, C, cancel=_StopsAfterPolls(3))
    assert len(started) == 1
    assert started[0].returncode == -9  # killed (SIGKILL), not finished


def test_the_race_reports_emd_by_the_solvers_own_time_and_cost():
    from backends.ot.methods import exact_cost, run_method

    a, b, C = _problem(24)
    run = run_method("emd", a, b, C, 1.0, cancel=CancelToken())
    assert run.end().cost == pytest.approx(exact_cost(a, b, C), rel=1e-12)
    assert run.end().marginal_error == 0.0
