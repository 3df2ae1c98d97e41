"""The Video Depth bench's per-clip paired differences: the numbers that say whether a gap is noise."""

import numpy as np
import pytest

from bench.videodepth import paired


def _rows(absrel, delta1, tae):
    return [{"absrel": a, "delta1": d, "tae": t} for a, d, t in zip(absrel, delta1, tae, strict=True)]


def test_paired_differences_count_wins_in_each_metric_direction():
    rows = {"a": _rows([0.1, 0.2, 0.3, 0.4], [0.9, 0.8, 0.9, 0.95], [1.0, 1.0, 1.0, float("nan")]),
            "b": _rows([0.2, 0.2, 0.4, 0.3], [0.8, 0.9, 0.9, 0.90], [2.0, 0.5, 2.0, 1.0])}
    out = paired(rows, "a", "b")
    assert out["absrel"]["mean"] == pytest.approx(-0.025) and out["absrel"]["better_on"] == 2  # lower is better
    assert out["delta1"]["better_on"] == 2 and out["delta1"]["clips"] == 4  # higher is better; a tie is no win
    assert out["tae"]["clips"] == 3 and out["tae"]["better_on"] == 2  # a clip without static pixels is left out
    d = np.array([-0.1, 0.0, -0.1, 0.1])
    assert out["absrel"]["ci95"] == pytest.approx(3.182446 * d.std(ddof=1) / 2, rel=1e-5)  # t(0.975, 3)
