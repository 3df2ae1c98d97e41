"""One user action, the same everywhere: the tab's button, the API, the CLI, the benches, a Ray cluster.

An :class:`Action` is a name (the API name, the run card's key), a typed request (a dataclass), the
model the request needs (``load``: built once per process through ``backends.common.modelbuild``), the
work (``work(request, model, cancel)`` yields :class:`ProgressEvent` s, previews among them, then a
typed result) and ``write(result, folder)`` that writes the result's files. :meth:`Action.write_run`
adds one run card (``run.json``) in one format for every capability; :func:`replay` rebuilds the
request from a card and runs it again, which gives the same outputs.

Where the work runs is the executor's business (:mod:`backends.common.executor`): in this process by
default, or on a Ray cluster (``serve --ray``); callers only iterate :meth:`Action.run`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InputError
from .files import write_text
from .params import check_request
from .progress import CancelToken, ProgressEvent
from .runcard import CARD_NAME, decode_request, encode_request, make_card, read_card


@dataclass(frozen=True)
class Action:
    """A user action of one capability; see the module's docstring."""

    name: str  # the API name and the run card's "action": "<capability>_<verb>"
    capability: str
    request_type: type  # a dataclass; the run card holds its fields
    work: Callable[[Any, Any, CancelToken | None], Iterator[Any]]  # (request, model, cancel) -> events, result
    load: Callable[[Any], Any] = lambda request: None  # the model the request needs (cached by its loader)
    write: Callable[[Any, Path], dict[str, Path]] | None = None  # a result's files (not the card)
    summary: Callable[[Any], dict] = lambda result: {}  # what the card says of the result (JSON)
    output_fields: tuple[str, ...] = ()  # request fields naming where outputs go: a replay points them at --out
    heavy: bool = True  # runs on the shared "gpu" queue (and on Ray when the app is served with --ray)
    description: str = ""

    def run(self, request, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | Any]:
        """The work's events and then its result, wherever the current executor runs it."""
        from .executor import current_executor

        return current_executor().run(self, request, cancel)

    def run_here(self, request, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | Any]:
        """The work in this process (what an executor calls, here or on a Ray worker)."""
        check_request(request)  # every declared field in its range (backends.common.params)
        validate = getattr(request, "validate", None)
        if callable(validate):
            validate()
        return self.work(request, self.load(request), cancel)

    def write_run(self, request, result, folder: Path) -> dict[str, Path]:
        """The result's files, the request's input files and ``run.json`` into ``folder``; name → path
        (``run`` is the card): everything a download needs to replay the run."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = dict(self.write(result, folder)) if self.write is not None else {}
        encoded, inputs = encode_request(request, folder, self.output_fields)
        card = make_card(self.name, self.capability, encoded, self.summary(result),
                         {k: _relative(p, folder) for k, p in paths.items()})
        paths.update(inputs)
        paths["run"] = folder / CARD_NAME
        write_text(paths["run"], json.dumps(card, indent=2))
        return paths

    def request_from_card(self, card: dict, folder: Path, out: Path | None = None):
        """The request a card was made with (its input files read from ``folder``; outputs go to ``out``)."""
        if card.get("action") != self.name:
            raise InputError(f"That run card is of '{card.get('action')}', not of '{self.name}'.")
        return decode_request(self.request_type, card.get("request"), Path(folder),
                              {name: out for name in self.output_fields} if out is not None else {})


def _relative(path: Path, folder: Path) -> str:
    path = Path(path)
    try:
        return path.relative_to(folder).as_posix()
    except ValueError:
        return path.name


def replay(card_path: Path, out: Path, actions: Callable[[str], Action],
           cancel: CancelToken | None = None) -> Iterator[ProgressEvent | tuple[Any, dict[str, Path]]]:
    """Run a run card's action again on its request; writes into ``out`` and ends with (result, paths).

    ``actions`` finds an action by name (``backends.action_named``)."""
    card = read_card(card_path)
    action = actions(card["action"])
    out = Path(out)
    request = action.request_from_card(card, Path(card_path).parent, out)
    result = None
    for item in action.run(request, cancel):
        if isinstance(item, ProgressEvent):
            yield item
        else:
            result = item
    yield result, action.write_run(request, result, out)
