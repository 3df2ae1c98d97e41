"""DCT here gives the authors' numbers: their DisTestUtil.py (boyangaaaaa/DCT), run once with only its removed
``scipy.stats.mvn`` import pointed at the same private Fortran routine, on the seeded inputs kept in the fixture
(the fixture's ``source`` says how; only the numbers are kept, none of their code)."""

import json
from pathlib import Path

import numpy as np
import pytest

from backends.citest.dct import conditional_test, estimate_bridge

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "dct_authors.json").read_text())
CASES = [(name, t) for name, case in FIXTURE["cases"].items() for t in case["tests"]]


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[f"{n}-{t['x']}{t['y']}|{t['s']}" for n, t in CASES])
def test_dct_matches_the_authors_code(name, expected):
    data = np.asarray(FIXTURE["cases"][name]["data"], dtype=float)
    cols = [expected["x"], expected["y"], *expected["s"]]
    got = conditional_test(estimate_bridge(data[:, cols]), 0, 1, list(range(2, len(cols))))
    tol = FIXTURE["tolerance"]
    assert abs(got.z - expected["z"]) <= tol["z_relative"] * max(1.0, abs(expected["z"]))
    assert abs(got.p_value - expected["p_value"]) <= tol["p_absolute"]
    assert got.variance == pytest.approx(expected["variance"], rel=tol["z_relative"])


def test_the_fixture_covers_every_path_of_theirs():
    """Binary-only (their disTest_binary) and mixed (disTest) data, marginal and conditional, |S| up to 2."""
    paths = {t["path"] for _, t in CASES}
    assert paths == {"disTest_binary", "disTest"}
    assert {len(t["s"]) for _, t in CASES} == {0, 1, 2}
    assert any(t["p_value"] > 0.5 for _, t in CASES) and any(t["p_value"] < 0.01 for _, t in CASES)
