"""The one way a CLI command runs an :class:`~backends.common.action.Action`: progress on stderr, the
run's files and run card into ``--out``, one JSON line on stdout; Ctrl-C stops the work between steps."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .action import Action, replay
from .progress import CancelToken, ProgressEvent


def print_progress(event: ProgressEvent) -> None:
    print(f"{event.fraction:6.1%} {event.message}", file=sys.stderr, flush=True)


def drive(work: Iterable[Any], cancel: CancelToken) -> Any:
    """The work's result, its progress printed; Ctrl-C cancels it (the work ends at its next step)."""
    result = None
    try:
        for item in work:
            if isinstance(item, ProgressEvent):
                print_progress(item)
            else:
                result = item
    except KeyboardInterrupt:
        cancel.cancel("interrupted (Ctrl-C)")
        raise
    return result


def run_action(action: Action, request, out: Path) -> tuple[Any, dict[str, Path]]:
    """Run ``action`` on ``request`` here (or where the executor sends it); write the run into ``out``."""
    cancel = CancelToken()
    result = drive(action.run(request, cancel), cancel)
    return result, action.write_run(request, result, Path(out))


def replay_card(card: Path, out: Path) -> tuple[Any, dict[str, Path]]:
    """``iclr25-studio replay run.json --out DIR``: the card's action on its request again, files into DIR."""
    from backends import action_named

    cancel = CancelToken()
    return drive(replay(Path(card), Path(out), action_named, cancel), cancel)


def print_line(**fields) -> None:
    """The command's one JSON line (paths as strings)."""
    print(json.dumps({k: (str(v) if isinstance(v, Path) else v) for k, v in fields.items()}, default=str))
