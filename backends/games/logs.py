"""The game logs the Strategy Games tab offers and takes back: written whole (or not at all) into the folder
the tab serves, and an uploaded log read as text, with a sentence when it is not one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from backends.common.errors import InputError
from backends.common.files import write_text


def write_log(folder: str | Path, name_and_text: tuple[str, str]) -> Path:
    """A game's offered log (``offered_log``'s name and JSON text) in ``folder``; a full disk is a clear message."""
    name, text = name_and_text
    if Path(name).name != name:
        raise ValueError(f"a log's name is a file name, not {name!r}")
    return write_text(Path(folder) / name, text)


def read_log(path: str | Path) -> str:
    """An uploaded game log's text; a file that is not text (an image renamed .json) is the user's to fix."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise InputError("That file is not a game log: it is not readable text (a log is JSON).") from None


@contextmanager
def reading_log(what: str) -> Iterator[None]:
    """Inside, a log's missing entry (``KeyError``) or bad value (``ValueError``, ``TypeError``, a JSON error
    among them) becomes ``InputError("Not <what>: …")``; an ``InputError`` passes as it is."""
    try:
        yield
    except InputError:
        raise
    except KeyError as e:
        raise InputError(f"Not {what}: it has no {e} entry.") from None
    except (ValueError, TypeError) as e:
        raise InputError(f"Not {what}: {e}.") from None
