"""Loading the text teacher (``layout3d-embedded``), 3D Layout's detector (``layout3d-detector``) and networks
trained from that teacher, through the model registry; a network of the label teacher is refused here (and a
text one by the label teacher's loader), by the teacher kind and weights fingerprint its config records."""

from __future__ import annotations

from pathlib import Path

from backends.common.modelbuild import cached_model
from backends.unlearn.loading import check_teacher, generator_info, model_folder

from .words import TEXT_TEACHER_ID

DETECTOR_ID = "layout3d-detector"


@cached_model(maxsize=1)
def load_text_models(teacher_id: str = TEXT_TEACHER_ID, detector_id: str = DETECTOR_ID):
    """(text teacher, its fingerprint, detector)."""
    from backends.common.cnn import SmallClassifier

    from .teacher import TextTeacher

    teacher = TextTeacher.load(model_folder(teacher_id))
    return teacher, teacher.fingerprint, SmallClassifier.load(model_folder(detector_id)).eval().requires_grad_(False)


def load_text_network(folder: str | Path, teacher_fingerprint: str):
    """(ε network, config) of an SFD generator or ESD model trained from the text teacher."""
    from .teacher import TextEps

    cfg = generator_info(folder)
    check_teacher(cfg, "text", teacher_fingerprint)
    net, cfg = TextEps.load(folder)
    return net.requires_grad_(False), cfg
