"""``bench.actions``: a bench runs a user action through its Action and gets what the action's own work gives.

A real action on the embedded models (Counterfactual, 32², a few bridge steps): ``run_action`` returns the
same counterfactual as the capability's ``generate`` called on the same request and models, reports its
progress, and stops on a cancelled token; ``load_model`` is the model the action runs with.
"""

import numpy as np
import pytest

from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken, run_to_result
from bench.actions import action, load_model, run_action


def _request():
    from backends.counterfactual.data import CLASSES
    from backends.counterfactual.requests import CounterfactualRequest

    image = (np.random.default_rng(0).random((32, 32, 3)) * 255).astype(np.uint8)
    mask = np.zeros((32, 32), bool)
    mask[8:24, 8:24] = True
    return CounterfactualRequest(image, mask, CLASSES[1], num_samples=1, num_inference_steps=4, seed=3)


def test_run_action_gives_the_actions_result_and_its_progress():
    from backends.counterfactual.service import generate, load_models

    request = _request()
    seen = []
    result = run_action("counterfactual_generate", request, on_progress=lambda f, m: seen.append((f, m)))
    direct = run_to_result(generate(request, None, load_models(request.bridge, request.classifier)))
    assert type(result).__name__ == "CounterfactualResult"
    assert len(result.samples) == 1
    assert np.array_equal(result.samples[0].image, direct.samples[0].image)
    assert result.samples[0].probabilities == direct.samples[0].probabilities
    assert [m for _, m in seen if "bridge step" in m] == [f"bridge step {k}/4" for k in range(1, 5)]
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] > fractions[0]


def test_load_model_is_the_model_the_action_runs_with():
    from backends.counterfactual.service import load_models

    request = _request()
    assert load_model("counterfactual_generate", request) is load_models(request.bridge, request.classifier)
    assert action("counterfactual_generate").name == "counterfactual_generate"


def test_a_cancelled_run_stops_and_a_refused_request_says_why():
    token = CancelToken()
    token.cancel("stopped by the bench")
    with pytest.raises(Cancelled):
        run_action("counterfactual_generate", _request(), cancel=token)
    from dataclasses import replace

    with pytest.raises(InputError, match="Network calls .* from 4 to 200, got 1"):
        run_action("counterfactual_generate", replace(_request(), num_inference_steps=1))
    with pytest.raises(InputError, match="No action"):
        run_action("counterfactual_no_such_verb", _request())
