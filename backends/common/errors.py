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

    def __init__(self, model_id: str, problems: list[str], how_to_fix: str = ""):
        self.model_id = model_id
        self.problems = list(problems)
        self.how_to_fix = how_to_fix
        fix = f"\nHow to fix it: {how_to_fix}" if how_to_fix else ""
        super().__init__(f"Model '{model_id}' is corrupt: " + "; ".join(self.problems) + fix)


class DiskFullError(StudioError):
    """The disk filled (or a quota was reached) while an output was written; nothing half-written is kept."""

    def __init__(self, name: str, free_mb: float):
        self.name = name
        self.free_mb = free_mb
        super().__init__(f"Not enough disk space to write {name}: free {free_mb:.0f} MB. Free some space and run "
                         "again; earlier results are kept.")


class DownloadError(StudioError):
    """A model could not be downloaded. ``kind`` says why (gated, auth, not-found, network, disk, offline,
    failed) and the message says what to do; it is never reported as "missing"."""

    def __init__(self, model_id: str, kind: str, message: str):
        self.model_id = model_id
        self.kind = kind
        super().__init__(f"Cannot download '{model_id}': {message}")


class WorkerLost(StudioError, RuntimeError):
    """The worker running a job (a Ray actor) died or stopped answering: the job failed; its worker is
    restarted, so running it again works."""
