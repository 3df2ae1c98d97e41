"""The Unlearning capability's actions (``backends.common.action``): Distil (a long, stoppable, resumable training
run of SFD, ESD or SalUn), Sample (the side-by-side grid) and Evaluate (the grid and the numbers), on the teacher the
request names (shapes, or the 3D Layout text teacher). Torch-free to import."""

from __future__ import annotations

from dataclasses import replace

from backends.common.action import Action

from .requests import DistilRequest, EvaluateRequest


def _teacher(request):
    if request.teacher == "text":
        from .text.loading import load_text_models

        return load_text_models()
    from .service import load_models

    return load_models()


def _distil(request: DistilRequest, models, cancel):
    from .distil import distil

    return distil(request, models[:2], cancel)


def _write_distil(result, folder):
    from .outputs import write_distil

    return write_distil(result, folder)


def _evaluate(request: EvaluateRequest, models, cancel):
    if request.teacher == "text":
        from .text.evaluate import evaluate_text

        return evaluate_text(request, models, cancel)
    from .evaluate import evaluate

    return evaluate(request, models, cancel)


def _sample(request: EvaluateRequest, models, cancel):
    return _evaluate(replace(request, metrics=False), models, cancel)


def _write_evaluation(result, folder):
    from .outputs import write_evaluation

    return write_evaluation(result, folder)


def _summary(result) -> dict:
    return result.to_json()


DISTIL = Action(
    name="unlearn_distil", capability="unlearn", request_type=DistilRequest, load=_teacher, work=_distil,
    write=_write_distil, summary=_summary, output_fields=("out_dir",),
    description="Score Forgetting Distillation (or the ESD / SalUn baseline): train a model that forgets one shape "
                "(or, on the 3D Layout text teacher, one word).")
SAMPLE = Action(
    name="unlearn_sample", capability="unlearn", request_type=EvaluateRequest, load=_teacher, work=_sample,
    write=_write_evaluation, summary=_summary, output_fields=("out_dir",),
    description="The same noise through the teacher, SFD, ESD, SalUn and negative guidance, read by the shape "
                "classifier.")
EVALUATE = Action(
    name="unlearn_evaluate", capability="unlearn", request_type=EvaluateRequest, load=_teacher, work=_evaluate,
    write=_write_evaluation, summary=_summary, output_fields=("out_dir",),
    description="Forget rate, the other classes' accuracy, Fréchet distance and seconds per image for each method.")

ACTIONS = (DISTIL, SAMPLE, EVALUATE)
