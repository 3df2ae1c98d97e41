"""Loading the teacher, the shape classifier and trained generators; a generator remembers its teacher by the
sha256 of the teacher's weights, so a checkpoint of another teacher is refused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from backends.common.errors import InputError

TEACHER_ID = "unlearn-teacher"
CLASSIFIER_ID = "counterfactual-classifier"  # the suite's shape classifier (resolved through the registry)
WEIGHTS = "model.safetensors"


def fingerprint(folder: str | Path) -> str:
    """The first 16 hex digits of the sha256 of a network folder's weights."""
    return hashlib.sha256((Path(folder) / WEIGHTS).read_bytes()).hexdigest()[:16]


def model_folder(model_id: str) -> Path:
    from backends.common.registry import default_registry

    return default_registry().resolve(model_id).path


def load_teacher(folder: str | Path | None = None):
    """(teacher network, its fingerprint)."""
    from .networks import LabelUNet

    folder = Path(folder) if folder is not None else model_folder(TEACHER_ID)
    net, _ = LabelUNet.load(folder)
    return net.requires_grad_(False), fingerprint(folder)


def load_classifier(folder: str | Path | None = None):
    from backends.common.cnn import SmallClassifier

    return SmallClassifier.load(Path(folder) if folder is not None else model_folder(CLASSIFIER_ID))


TEXT_WEIGHTS = "diffusion_pytorch_model.safetensors"  # a text-teacher network: a diffusers UNet folder
TEACHER_KINDS = {"shapes": "the label-conditional teacher of the shapes", "text": "the 3D Layout text-to-image teacher"}


def generator_info(folder: str | Path) -> dict:
    path = Path(folder) / "config.json"
    if not path.exists() or not any((Path(folder) / w).exists() for w in (WEIGHTS, TEXT_WEIGHTS)):
        raise InputError(f"{folder} is not a generator folder (config.json + {WEIGHTS}).")
    cfg = json.loads(path.read_text())
    if cfg.get("method") not in ("sfd", "esd", "salun"):
        raise InputError(f"{folder} holds no SFD, ESD or SalUn network (its config names no method).")
    return cfg


def network_config(spec: str, method: str) -> tuple[Path, dict]:
    """(folder, config) of the network a user named by Distil run id or folder, refused if it holds another method."""
    from .evaluate import run_folder
    from .requests import NAMES, is_run_id

    folder = run_folder(spec) if is_run_id(spec) else Path(spec)
    if (folder / "network").is_dir():
        folder = folder / "network"
    cfg = generator_info(folder)
    if cfg["method"] != method:
        raise InputError(f"{spec} holds a {NAMES[cfg['method']]} network, not {NAMES[method]}.")
    return folder, cfg


def check_teacher(cfg: dict, kind: str, teacher_fingerprint: str) -> None:
    """Refuse a network distilled from another kind of teacher, or from other weights of this one."""
    made = cfg.get("teacher_kind", "shapes")  # networks made before the text teacher were all of the shapes
    if made != kind:
        raise InputError(f"That network was distilled from {TEACHER_KINDS.get(made, made)}, not from "
                         f"{TEACHER_KINDS[kind]}: choose that teacher to compare it.")
    if cfg.get("teacher") != teacher_fingerprint:
        raise InputError(f"That checkpoint was distilled from another teacher (weights {cfg.get('teacher')}), not from "
                         f"the loaded one ({teacher_fingerprint}): its samples would not be comparable.")


def load_generator(folder: str | Path, teacher_fingerprint: str):
    """(network, config) of a trained SFD generator, ESD or SalUn model; refused when made from another teacher."""
    from .networks import LabelUNet

    cfg = generator_info(folder)
    check_teacher(cfg, "shapes", teacher_fingerprint)
    net, cfg = LabelUNet.load(folder)
    return net.requires_grad_(False), cfg
