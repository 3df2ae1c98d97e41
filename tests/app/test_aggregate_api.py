"""The Aggregation tab through gradio_client, as an API user calls it."""

from pathlib import Path

import numpy as np
import pytest

PATHOLOGICAL = ["good (noisy)", "bad −3", "bad +3"]


def test_the_models_follow_the_problem(client):
    update = client.predict("laplace", api_name="/aggregate_models")
    choices = [c[0] if isinstance(c, list | tuple) else c for c in update["choices"]]
    assert "spectral 16" in choices and "GP collocation" in choices and update["value"] == choices


def test_a_run_returns_every_method_weights_that_sum_to_one_and_downloads(client):
    status, mse_plot, weights_plot, errors_plot, summary, files = client.predict(
        problem="pathological", models=PATHOLOGICAL, n_train=12, regularization=0.1, max_iter=60, seed=2,
        api_name="/aggregate_run")
    assert set(summary["test_mse"]) == {"meva", "meea", "stacking", "average", "inverse_variance", "best_single"}
    assert summary["n_train"] == 12 and summary["models"] == PATHOLOGICAL
    assert "test MSE" in status and "MEVA" in status
    names = {Path(f).name for f in files}
    assert {"predictions.npz", "weights.npz", "run.json", "test_mse.png", "weight_maps.png"} <= names
    with np.load(next(f for f in files if f.endswith("weights.npz"))) as w:
        assert np.allclose(w["alpha_meva"].sum(1), 1) and w["alpha_meva"].shape == (200, 3)
    with np.load(next(f for f in files if f.endswith("predictions.npz"))) as p:
        mse = float(((p["pred_meva"] - p["y_test"]) ** 2).mean())
    assert np.isclose(mse, summary["test_mse"]["meva"], rtol=1e-4)
    assert all(Path(p).stat().st_size > 1000 for p in (mse_plot, weights_plot, errors_plot))


def test_choosing_one_model_is_a_clear_error(client):
    with pytest.raises(Exception, match="at least two"):
        client.predict(problem="pathological", models=["good (noisy)"], n_train=12, regularization=0.1, max_iter=20,
                       seed=0, api_name="/aggregate_run")


def test_a_sweep_draws_test_error_against_the_training_size(client):
    status, plot, summary, files = client.predict(problem="pathological", models=PATHOLOGICAL, largest=8, seeds=1,
                                                  seed=0, api_name="/aggregate_sweep")
    assert summary["sizes"] == [4, 8] and len(summary["test_mse_median"]["meva"]) == 2
    assert "Sweep of pathological" in status and Path(plot).stat().st_size > 1000
