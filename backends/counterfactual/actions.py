"""The Counterfactual capability's actions (``backends.common.action``): what the tab's Generate button,
the API, the CLI, the benches and a Ray worker run, and what a run card replays. Torch-free to import."""

from __future__ import annotations

from backends.common.action import Action

from .requests import CounterfactualRequest


def _load(request: CounterfactualRequest):
    from .service import load_models

    return load_models(request.bridge, request.classifier)


def _generate(request: CounterfactualRequest, models, cancel):
    from .service import generate

    return generate(request, cancel, models)


def _write(result, folder):
    from .outputs import write_files

    return write_files(result, folder)


GENERATE = Action(
    name="counterfactual_generate", capability="counterfactual", request_type=CounterfactualRequest,
    load=_load, work=_generate, write=_write, summary=lambda result: result.to_json(),
    description="RCSB counterfactuals: the painted region changes until the classifier says the target class.")

ACTIONS = (GENERATE,)
