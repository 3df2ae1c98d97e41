"""The labels the label-conditional teacher knows: the primitive world's shapes (torch-free)."""

from __future__ import annotations

from backends.common.errors import InputError
from backends.synth.shape_images import CLASSES

# the forget → safe choices the shipped generators were distilled for (training/unlearn_generators.py)
DEFAULT_CHOICES: tuple[tuple[str, str], ...] = (("cube", "sphere"), ("cone", "cylinder"))


def class_index(name: str | int, what: str = "class") -> int:
    """The label of a shape name (or index), or a clear error naming the shapes the teacher knows."""
    if isinstance(name, int) or (isinstance(name, str) and name.strip().isdigit()):
        i = int(name)
        if 0 <= i < len(CLASSES):
            return i
    elif isinstance(name, str) and name.strip().lower() in CLASSES:
        return CLASSES.index(name.strip().lower())
    raise InputError(f"The teacher does not know the {what} {name!r}: it knows {', '.join(CLASSES)}.")


def check_pair(forget: str, safe: str) -> tuple[int, int]:
    """(forget, safe) labels; forgetting a class onto itself is refused."""
    f, s = class_index(forget, "class to forget"), class_index(safe, "class to map it to")
    if f == s:
        raise InputError(f"Forgetting {CLASSES[f]!r} onto itself changes nothing: choose another class to map it to.")
    return f, s


def choice_name(forget: str, safe: str) -> str:
    return f"{forget}-to-{safe}"
