"""What the server keeps per browser session of the Avatar tab: the last avatar (with the avatar file a video
of it names) and the last fitted photos, in the one bounded per-user store (``common.session_store``): a few
sessions' worth, the least recently used dropped first, a dropped one reported as expired. Torch-free."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backends.common.errors import InputError
from backends.common.session_store import SessionStore

MAX_SESSIONS = 8
NO_AVATAR = "Reconstruct an avatar first (or it expired: only the last few sessions' avatars are kept)."
NO_PHOTOS = ("Upload photos of a person and press 'Find the person and fit the body' first (or the fit expired: "
             "only the last few sessions' fits are kept).")


@dataclass
class SessionAvatar:
    result: Any  # service.AvatarResult
    file: Path  # its avatar.safetensors (written with the run that made it): what a video's request names
    files: list[Path] = field(default_factory=list)  # every file of that run (its run card among them)


AVATARS: SessionStore[SessionAvatar] = SessionStore(capacity=MAX_SESSIONS, expired=lambda key: InputError(NO_AVATAR))
PHOTOS: SessionStore[Any] = SessionStore(capacity=MAX_SESSIONS, expired=lambda key: InputError(NO_PHOTOS))


def keep_avatar(session: str, result, paths: dict[str, Path]) -> None:
    """Keep the session's new avatar with its run's files (``paths``: what the reconstruct action wrote)."""
    AVATARS.put(session, SessionAvatar(result, Path(paths["avatar"]), [Path(p) for p in paths.values()]))


def current_avatar(session: str) -> SessionAvatar:
    """The session's avatar, or the InputError that asks for one."""
    entry = AVATARS.get(session)
    if entry is None:
        raise InputError(NO_AVATAR)
    return entry


def shown_avatar(session: str) -> SessionAvatar | None:
    """The session's avatar if it has one (moving the pose sliders before reconstructing is fine)."""
    try:
        return AVATARS.get(session)
    except InputError:
        return None


def avatar_file(session: str, new_folder: Callable[[], Path]) -> Path:
    """The session's avatar file; written again into ``new_folder()`` if its run's folder was cleaned away."""
    entry = current_avatar(session)
    if not entry.file.is_file():
        from .outputs import save_avatar

        entry.file = save_avatar(entry.result, Path(new_folder()) / "avatar.safetensors")
    return entry.file


def keep_photos(session: str, fitted) -> None:
    PHOTOS.put(session, fitted)


def fitted_photos(session: str):
    """The session's last fit (``from_photos.PhotoSet``), or the InputError that asks for one."""
    fitted = PHOTOS.get(session)
    if fitted is None:
        raise InputError(NO_PHOTOS)
    return fitted
