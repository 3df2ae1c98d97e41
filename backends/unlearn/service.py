"""The models every Unlearning action needs, built once per process: the teacher (and its fingerprint) and the
suite's shape classifier."""

from __future__ import annotations

from backends.common.modelbuild import cached_model


@cached_model(maxsize=1)
def load_models(teacher_id: str = "unlearn-teacher", classifier_id: str = "counterfactual-classifier"):
    """(teacher, teacher fingerprint, classifier)."""

    from .loading import load_classifier, load_teacher, model_folder

    teacher, fp = load_teacher(model_folder(teacher_id))
    return teacher, fp, load_classifier(model_folder(classifier_id)).requires_grad_(False)
