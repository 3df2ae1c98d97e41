"""The few exception types that cross the backend boundary.

The app turns :class:`InputError` (and its kin) into a message a person can act on; anything else
is a bug and is shown as such.
"""

from __future__ import annotations


class StudioError(Exception):
    """Base of every error the suite raises on purpose."""


class InputError(StudioError, ValueError):
    """The request is invalid. The message is written for a person, not a developer."""


class Cancelled(StudioError):
    """Work stopped because the user (or a time limit) cancelled it."""


class ModelMissingError(StudioError, FileNotFoundError):
    """A model is not present where the suite looked for it."""

    def __init__(self, model_id: str, searched: list[str], how_to_get: str):
        self.model_id = model_id
        self.searched = list(searched)
        self.how_to_get = how_to_get
        places = "\n".join(f"  - {p}" for p in self.searched) or "  (nowhere: no location configured)"
        super().__init__(
            f"Model '{model_id}' is missing. Looked in:\n{places}\nHow to get it: {how_to_get}"
        )


class ModelBuildError(StudioError, RuntimeError):
    """A model was built but came out unusable (tensors left on the 'meta' device); it was not kept."""


class ModelCorruptError(StudioError):
    """A model's files are present but do not match their recorded checksums."""

    def __init__(self, model_id: str, problems: list[str]):
        self.model_id = model_id
        self.problems = list(problems)
        super().__init__(f"Model '{model_id}' is corrupt: " + "; ".join(self.problems))
