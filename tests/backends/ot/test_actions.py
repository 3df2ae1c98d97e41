"""The OT actions as a user runs them (tiny sizes): colour transfer, densities + interpolation, the solver race,
bad inputs, Stop, downloads that load back, and a run card that replays to the same plan."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from backends.common.action import replay
from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken, ProgressEvent, run_to_result
from backends.ot.actions import COLOUR, CONVERGENCE, DENSITIES
from backends.ot.requests import ColourTransferRequest, ConvergenceRequest, DensityRequest


def blocks(colours, size=24):
    """A photo of vertical stripes in the given RGB colours."""
    img = np.zeros((size, size, 3), np.uint8)
    for k, c in enumerate(colours):
        img[:, k * size // len(colours):(k + 1) * size // len(colours)] = c
    return img


def test_colour_transfer_moves_the_palette_and_its_files_load_back(tmp_path):
    source = blocks([(200, 30, 30), (30, 30, 200), (240, 240, 240)])
    reference = blocks([(20, 160, 20), (90, 200, 90), (10, 60, 10)])
    request = ColourTransferRequest(source=source, reference=reference, colours=8, epsilon=2.0**-8)
    result = run_to_result(COLOUR.run(request))
    assert result.result.shape == source.shape
    green = result.result.reshape(-1, 3).mean(0)
    assert green[1] > green[0] and green[1] > green[2]  # the red/blue/white photo has become green
    np.testing.assert_allclose(result.plan.sum(1), result.source_weights, atol=1e-12)  # feasible plan
    np.testing.assert_allclose(result.plan.sum(0), result.reference_weights, atol=1e-12)
    paths = COLOUR.write_run(request, result, tmp_path)
    plan = sp.load_npz(paths["plan"]).toarray()
    assert np.abs(plan - result.plan).sum() <= 1e-9
    pots = np.load(paths["potentials"])
    assert pots["f"].shape == result.source_weights.shape and pots["g"].shape == result.reference_weights.shape
    assert json.loads(paths["run"].read_text())["result"]["device"] in ("cpu", "cuda")


def test_densities_interpolation_starts_and_ends_at_the_two_densities():
    result = run_to_result(DENSITIES.run(DensityRequest(side=8, frames=3, class_a="cauchy", class_b="shapes")))
    assert result.frames.shape == (3, 8, 8)
    np.testing.assert_allclose(result.frames[0], result.a, atol=1e-9)
    np.testing.assert_allclose(result.frames[-1], result.b, atol=1e-9)
    assert not np.allclose(result.frames[1], result.a, atol=1e-3)  # the middle frame is neither
    assert result.info["converged"] and result.info["plan_marginal_error"] < 1e-12


def test_a_replayed_run_card_gives_the_same_plan(tmp_path):
    uploaded = np.zeros((20, 30), np.float64)
    uploaded[5:9, 3:25] = 1.0  # a bar, not square: it is resized (and said so)
    request = DensityRequest(source=uploaded, side=8, frames=2, epsilon=2.0**-9)
    events = []
    result = run_to_result(DENSITIES.run(request), on_progress=lambda f, m: events.append(m))
    assert any("newton step" in m for m in events) and any("anneal step" in m for m in events)
    assert any("resized to 8×8" in n for n in result.info["notes"])
    first = tmp_path / "first"
    DENSITIES.write_run(request, result, first)
    *_, (again, _paths) = list(replay(first / "run.json", tmp_path / "again", lambda name: DENSITIES))
    assert np.array_equal(again.plan, result.plan)
    assert np.array_equal(sp.load_npz(first / "plan.npz").toarray(), sp.load_npz(tmp_path / "again" / "plan.npz").toarray())


@pytest.mark.parametrize("bad, message", [
    (-np.ones((8, 8)), "negative"),
    (np.zeros((8, 8)), "no mass"),
    (b"not an image at all" * 10, "not an image"),
])
def test_bad_densities_are_clear_errors(bad, message):
    with pytest.raises(InputError, match=message):
        run_to_result(DENSITIES.run(DensityRequest(source=bad, side=8)))


def test_epsilon_must_be_positive_and_a_too_large_problem_names_what_fits(monkeypatch):
    with pytest.raises(InputError, match="ε"):
        run_to_result(DENSITIES.run(DensityRequest(side=8, epsilon=0.0)))
    import backends.ot.problems as problems

    monkeypatch.setattr(problems, "default_memory_limit", lambda device="cpu", fraction=0.5: 64 * 2**20)
    with pytest.raises(problems.ProblemTooLarge, match=r"largest square problem that fits is n = \d+"):
        run_to_result(DENSITIES.run(DensityRequest(side=64)))


def test_the_race_traces_every_method_and_emd_is_exact():
    # an easy ε: every method converges long before the (generous) budget, so nothing here depends on speed
    result = run_to_result(CONVERGENCE.run(ConvergenceRequest(side=8, budget=60.0, epsilon=2.0**-6)))
    runs = {r["method"]: r for r in result.runs}
    assert set(runs) == {"tnt", "sinkhorn", "sinkhorn_log", "sinkhorn_eps_scaling", "emd"}
    assert runs["emd"]["relative_gap"] < 1e-12 and runs["emd"]["marginal_error"] == 0.0
    assert all(r["trace"] for r in result.runs)
    assert all(r["status"] == "finished" for r in result.runs), [(r["method"], r["message"]) for r in result.runs]
    # the same entropic problem: MDOT-TNT's rounded plan costs what converged Sinkhorn's does (to its tolerance)
    assert abs(runs["tnt"]["cost"] - runs["sinkhorn"]["cost"]) <= 0.02 * runs["sinkhorn"]["cost"]
    assert runs["tnt"]["relative_gap"] > 0  # an entropic plan is not the exact one


def test_stop_ends_the_solve_at_its_next_step():
    token = CancelToken()
    seen = 0
    with pytest.raises(Cancelled):
        for item in DENSITIES.run(DensityRequest(side=16, epsilon=2.0**-12), token):
            if isinstance(item, ProgressEvent) and "step" in item.message:
                seen += 1
                token.cancel()
    assert seen >= 1


def test_cli_densities_from_npy_and_png(tmp_path, capsys):
    """`iclr25-studio ot densities` (run in this process: the same parser and code as the command)."""
    from PIL import Image

    from app.cli import main

    np.save(tmp_path / "a.npy", np.outer(np.hanning(10), np.hanning(10)))
    Image.fromarray((np.eye(12) * 255).astype(np.uint8)).save(tmp_path / "b.png")
    out = tmp_path / "out"
    code = main(["ot", "densities", "--source", str(tmp_path / "a.npy"), "--target", str(tmp_path / "b.png"),
                 "--side", "8", "--frames", "2", "--out", str(out)])
    assert code == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["converged"] and line["cost"] > 0
    assert sp.load_npz(out / "plan.npz").shape == (64, 64)
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.random((30, 2)))
    (tmp_path / "y.csv").write_text("x,y\n" + "\n".join(f"{a},{b}" for a, b in rng.random((25, 2))) + "\n")
    assert main(["ot", "clouds", "--source", str(tmp_path / "x.npy"), "--target", str(tmp_path / "y.csv"),
                 "--out", str(tmp_path / "clouds")]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["exact_cost"] <= line["cost"] and sp.load_npz(tmp_path / "clouds" / "plan.npz").shape == (30, 25)
    np.save(tmp_path / "bad.npy", -np.ones((8, 8)))
    assert main(["ot", "densities", "--source", str(tmp_path / "bad.npy"), "--out", str(tmp_path / "o2")]) == 1
    assert "negative" in capsys.readouterr().out


def test_point_clouds_downloads_load_back_as_inputs_and_the_card_replays(tmp_path):
    from backends.ot.actions import CLOUDS
    from backends.ot.clouds import read_points
    from backends.ot.requests import PointCloudRequest

    request = PointCloudRequest(kind_a="ring", kind_b="square", n=40, cost="l1", epsilon=2.0**-9, links=50)
    result = run_to_result(CLOUDS.run(request))
    assert result.plan.shape == (40, 40) and result.info["dimension"] == 2
    np.testing.assert_allclose(result.plan.sum(1), result.wa, atol=1e-12)  # feasible
    assert result.exact_cost <= result.cost + 1e-12 and 0 <= result.info["relative_gap"] < 0.5
    first = tmp_path / "first"
    paths = CLOUDS.write_run(request, result, first)
    assert np.abs(sp.load_npz(paths["plan"]).toarray() - result.plan).sum() <= 1e-9
    assert np.load(paths["potentials"])["f"].shape == (40,)
    # the written clouds (x, y, weight) go back in as uploads with a weights column: the same problem, the same plan
    again = run_to_result(CLOUDS.run(PointCloudRequest(
        source=read_points(paths["source_points"]), target=read_points(paths["target_points"]), weights_column=True,
        cost="l1", epsilon=2.0**-9)))
    assert np.array_equal(again.plan, result.plan)
    *_, (replayed, _paths) = list(replay(first / "run.json", tmp_path / "again", lambda name: CLOUDS))
    assert np.array_equal(replayed.plan, result.plan)


def _cloud_error(source, target=None, **kw):
    from backends.ot.actions import CLOUDS
    from backends.ot.requests import PointCloudRequest

    run_to_result(CLOUDS.run(PointCloudRequest(source=source, target=target, **{"n": 20, **kw})))


@pytest.mark.parametrize("source, target, kw, message", [
    (np.ones((10, 5)), None, {}, "5 column"),
    (np.array([[0.1, 0.2], [np.nan, 0.3], [0.5, 0.5]]), None, {}, "NaN"),
    (np.random.default_rng(0).random((10, 3)), np.random.default_rng(1).random((10, 2)), {}, "different dimensions"),
    (np.random.default_rng(0).random((5000, 2)), None, {}, "at most 4,096"),
    (np.column_stack([np.ones((4, 2)), [1, -1, 1, 1]]), None, {"weights_column": True}, "negative"),
])
def test_bad_point_clouds_are_clear_errors(source, target, kw, message):
    with pytest.raises(InputError, match=message):
        _cloud_error(source, target, **kw)


def test_point_clouds_too_large_for_memory_name_what_fits(monkeypatch):
    import backends.ot.problems as problems

    monkeypatch.setattr(problems, "default_memory_limit", lambda device="cpu", fraction=0.5: 64 * 100 * 100)
    with pytest.raises(problems.ProblemTooLarge, match=r"largest square problem that fits is n = 100 "):
        _cloud_error(np.random.default_rng(0).random((200, 2)), n=200)  # 200 × 200 points


def test_three_d_point_clouds_are_solved_and_plotted(tmp_path):
    from backends.ot.actions import CLOUDS
    from backends.ot.requests import PointCloudRequest

    rng = np.random.default_rng(0)
    request = PointCloudRequest(source=rng.random((12, 3)), target=rng.random((9, 3)) + 1.0, links=20)
    result = run_to_result(CLOUDS.run(request))
    assert result.plan.shape == (12, 9) and result.info["dimension"] == 3
    assert result.exact_cost <= result.cost + 1e-12
    assert CLOUDS.write_run(request, result, tmp_path)["plot"].stat().st_size > 0
