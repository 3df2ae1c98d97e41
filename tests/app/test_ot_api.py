"""The Optimal Transport tab through gradio_client, as an API user calls it."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from gradio_client import handle_file

EXAMPLES = Path(__file__).resolve().parents[2] / "app" / "static" / "examples" / "ot"


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Tiny problems: the live app (this process) solves them single-threaded, as tests/backends/ot does."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_colour_transfer_of_two_photos(client):
    status, result, palettes, summary, files = client.predict(
        handle_file(str(EXAMPLES / "coffee.jpg")), handle_file(str(EXAMPLES / "chelsea.jpg")), 16, 2.0**-8, 96, 0,
        api_name="/ot_colour_transfer")
    assert "Transport cost" in status and "cpu" in status
    assert summary["colours"] == [16, 16] and summary["cost"] > 0
    names = {Path(f).name for f in files}
    assert {"result.png", "plan.npz", "potentials.npz", "run.json"} <= names
    plan = sp.load_npz(next(f for f in files if f.endswith("plan.npz"))).toarray()
    assert plan.shape == (16, 16) and abs(plan.sum() - 1.0) < 1e-9


def test_densities_card_replays_to_the_same_plan_through_the_cli(client, tmp_path):
    status, frame, t, files = client.predict(
        first=None, second=None, class_a="cauchy", class_b="shapes", side=8, frames=3, epsilon=2.0**-9,
        api_name="/ot_densities")
    assert "Transport cost" in status and "n = 64" in status
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    for f in files:
        shutil.copy(f, downloads / Path(f).name)
    card = json.loads((downloads / "run.json").read_text())
    assert card["action"] == "ot_densities" and card["request"]["side"] == 8
    out = tmp_path / "again"
    res = subprocess.run([sys.executable, "-m", "app", "replay", str(downloads / "run.json"), "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert np.array_equal(sp.load_npz(out / "plan.npz").toarray(), sp.load_npz(downloads / "plan.npz").toarray())


def test_convergence_returns_a_plot_and_every_methods_end_point(client):
    status, plot, table, files = client.predict(
        class_a="grf_smooth", class_b="grf_smooth", side=8, epsilon=2.0**-6, budget=30.0,
        api_name="/ot_convergence")
    assert "Exact cost" in status and "n = 64" in status
    assert plot is not None
    methods = [row[0] for row in table["data"]]
    assert len(methods) == 5 and any("EMD" in m for m in methods) and any("MDOT-TNT" in m for m in methods)
    assert {"convergence.json", "convergence.png"} <= {Path(f).name for f in files}


@pytest.mark.parametrize("kwargs, message", [
    ({"epsilon": 0.0}, "ε"),
    ({"source": "NOT_AN_IMAGE"}, "not an image"),
])
def test_bad_colour_inputs_are_clear_errors(client, tmp_path, kwargs, message):
    from gradio_client.exceptions import AppError

    fake = tmp_path / "holiday.png"
    fake.write_text("not really a picture\n" * 20)
    args = {"source": handle_file(str(EXAMPLES / "coffee.jpg")), "reference": handle_file(str(EXAMPLES / "chelsea.jpg")),
            "colours": 8, "epsilon": 2.0**-8, "max_side": 64, "seed": 0}
    args.update({k: handle_file(str(fake)) if v == "NOT_AN_IMAGE" else v for k, v in kwargs.items()})
    with pytest.raises(AppError, match=message):
        client.predict(**args, api_name="/ot_colour_transfer")


def test_an_uploaded_density_of_another_size_is_resized_and_said_so(client, tmp_path):
    from PIL import Image

    bar = np.zeros((30, 50), np.uint8)
    bar[10:20, 5:45] = 255
    Image.fromarray(bar).save(tmp_path / "bar.png")
    payload = {"background": handle_file(str(tmp_path / "bar.png")), "layers": [],
               "composite": handle_file(str(tmp_path / "bar.png"))}
    status, *_ = client.predict(first=payload, second=None, side=8, frames=2, api_name="/ot_densities")
    assert "resized to 8×8" in status and "aspect changed" in status


def test_point_clouds_from_two_uploads_and_a_bad_file(client, tmp_path):
    from gradio_client.exceptions import AppError

    rng = np.random.default_rng(0)
    np.save(tmp_path / "a.npy", rng.random((30, 2)))
    (tmp_path / "b.csv").write_text("x,y,weight\n" + "\n".join(f"{x},{y},{w}" for x, y, w in rng.random((20, 3)))
                                    + "\n")
    status, plot, summary, files = client.predict(
        first=handle_file(str(tmp_path / "a.npy")), second=handle_file(str(tmp_path / "a.npy")), n=20,
        api_name="/ot_point_clouds")
    assert "gap to EMD" in status and "30 × 30 points" in status and plot is not None
    assert summary["exact_cost"] <= summary["cost"] + 1e-12
    assert {"plan.npz", "potentials.npz", "source.csv", "clouds.png", "run.json"} <= {Path(f).name for f in files}
    assert sp.load_npz(next(f for f in files if f.endswith("plan.npz"))).shape == (30, 30)
    with pytest.raises(AppError, match="different dimensions"):  # no weights column declared: b.csv is 3-D
        client.predict(first=handle_file(str(tmp_path / "a.npy")), second=handle_file(str(tmp_path / "b.csv")),
                       api_name="/ot_point_clouds")
