"""One aggregation run as the tab, the API and the CLI make it: every method, weights that sum to one, files that
load back, clear refusals and a Stop that ends the fit."""

import numpy as np
import pytest

from backends.aggregate.actions import AGGREGATE
from backends.aggregate.catalog import METHODS
from backends.aggregate.requests import AggregateRequest
from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken, ProgressEvent, run_to_result


@pytest.fixture(scope="module")
def burgers_run(tmp_path_factory):
    request = AggregateRequest(problem="burgers", n_train=6, max_iter=60, seed=1,
                               models=["upwind FV 64", "spectral 32", "kernel operator"])
    result = run_to_result(AGGREGATE.run(request))
    folder = tmp_path_factory.mktemp("run")
    return request, result, AGGREGATE.write_run(request, result, folder)


def test_every_method_is_measured_and_the_weights_sum_to_one(burgers_run):
    _, result, _ = burgers_run
    assert list(result.test_mse) == list(METHODS)
    assert result.model_names == ["upwind FV 64", "spectral 32", "kernel operator"]
    for method, w in result.weights.items():
        assert w.shape == result.m_test.shape and np.allclose(w.sum(1), 1), method
    assert np.isclose(result.test_mse["average"], ((result.m_test.mean(1) - result.y_test) ** 2).mean())
    best = result.model_names.index(result.best_model)
    assert np.isclose(result.test_mse["best_single"], result.model_test_mse[result.best_model])
    assert np.array_equal(result.predictions["best_single"], result.m_test[:, best])


def test_the_downloads_load_back(burgers_run):
    _, result, paths = burgers_run
    with np.load(paths["predictions"]) as f:
        assert np.array_equal(f["pred_meva"], result.predictions["meva"]) and f["model_outputs"].shape[1] == 3
    with np.load(paths["weights"]) as f:
        assert np.allclose(f["alpha_meva"].sum(1), 1) and f["meva_dual_coef"].shape[1] == 3
    assert all(paths[k].stat().st_size > 1000 for k in ("mse_plot", "weights_plot", "errors_plot"))


def test_a_run_card_replays_to_the_same_predictions(burgers_run, tmp_path):
    from backends import action_named
    from backends.common.action import replay

    _, result, paths = burgers_run
    *_, (again, again_paths) = list(replay(paths["run"], tmp_path, action_named))
    assert np.array_equal(again.predictions["meva"], result.predictions["meva"])
    assert again.model_names == result.model_names


@pytest.mark.parametrize("models, message", [(["upwind FV 64"], "at least two"), ("upwind FV 64,nope", "no model 'nope'")])
def test_bad_model_choices_are_clear_errors(models, message):
    with pytest.raises(InputError, match=message):
        run_to_result(AGGREGATE.run(AggregateRequest(problem="burgers", models=models)))


def test_out_of_range_size_is_refused():
    with pytest.raises(InputError, match="Training-set size"):
        run_to_result(AGGREGATE.run(AggregateRequest(problem="burgers", n_train=1)))


def test_stop_ends_the_run_during_lbfgs():
    token = CancelToken()
    seen = []
    with pytest.raises(Cancelled):
        for item in AGGREGATE.run(AggregateRequest(problem="pathological", n_train=60, max_iter=2000), token):
            if isinstance(item, ProgressEvent):
                seen.append(item.message)
                if "L-BFGS" in item.message:
                    token.cancel()
    assert any("L-BFGS" in m for m in seen)
