"""One cancellation idiom in the whole suite: the run's ``CancelToken``, handed down as an argument (``cancel``) or
an attribute of the object doing the work, and checked with ``raise_if_cancelled(cancel)`` /
``cancel.raise_if_cancelled()``. A second idiom — a token found through a context variable, a ``should_stop``
callback polled by the work — must not come back: this reads every Python file and docs page of the project
for one."""

import re
from pathlib import Path

import backends.common.progress as progress

ROOT = Path(__file__).resolve().parents[3]
FOLDERS = ("backends", "app", "bench", "training", "tests", "scripts")
# the names of the retired context-variable idiom and of stop-flag callbacks
RETIRED = re.compile(r"\b(check_cancelled|current_token|cancel_scope|should_stop|is_cancelled|stop_requested)\b")
# a context variable that carries a token or a stop flag
AMBIENT = re.compile(r"ContextVar\([^)]*(cancel|token|stop)", re.IGNORECASE)


def _sources() -> list[Path]:
    this = Path(__file__).resolve()
    code = [p for folder in FOLDERS if (ROOT / folder).is_dir() for p in sorted((ROOT / folder).rglob("*.py"))
            if p.resolve() != this and ".venv" not in p.parts]
    return code + sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]


def test_no_second_cancellation_idiom_in_the_tree():
    sources = _sources()
    assert len(sources) > 100  # the tree was found (a wrong root would pass vacuously)
    found = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in sources
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if RETIRED.search(line) or AMBIENT.search(line)]
    assert not found, "a second cancellation idiom:\n" + "\n".join(found)


def test_progress_offers_only_the_token():
    for name in ("check_cancelled", "current_token", "cancel_scope"):
        assert not hasattr(progress, name), name
    assert callable(progress.raise_if_cancelled) and hasattr(progress.CancelToken, "raise_if_cancelled")


def test_the_grep_would_catch_each_retired_form():
    """The patterns above really match what they forbid (a typo in them would let everything through)."""
    for line in ("from backends.common.progress import check_cancelled", "token = current_token()",
                 "with cancel_scope(token):", "if should_stop():", "_T = contextvars.ContextVar('cancel_token')"):
        assert RETIRED.search(line) or AMBIENT.search(line), line
    assert not RETIRED.search("raise_if_cancelled(cancel)") and not AMBIENT.search("ContextVar('action_session')")
