"""STRATEGIST improvement runs as backend calls: what the Improve tab and ``iclr25-studio games improve``
both run (the ``games_improve`` action, ``backends.games.actions``), so the rules live once — which run a
request continues, each game's default budget, the evaluation settings, reading a run's library and
choosing the strategy the strategist agents play.

A run is of one **kind** (``domains.run_kinds()``: a game, or "game-part" for games with several parts)
and lives in a folder (library.json, ideas.json, log.jsonl, strategist.json, the LLM's replay cache, and
the run card run.json of the last call that ran it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from backends.common.errors import Cancelled, InputError
from backends.common.params import check_request
from backends.common.progress import CancelToken, ProgressEvent
from backends.games import domains
from backends.games.requests import METHODS, ImproveRequest  # noqa: F401 (the service's request, re-exported)
from backends.games.strategist import loop
from backends.games.strategist.llm import LLM, get_llm


@dataclass
class RunView:
    """A run as the user sees it: the best score per iteration, the library (best first), its files."""

    run_dir: str
    curve: list[dict]  # {"iteration", "best score"}
    rows: list[list]  # id, origin, idea, parent, score, generation
    files: list[str]  # the run's files to download

    @property
    def ids(self) -> list[str]:
        return [r[0] for r in self.rows]


@dataclass
class ImproveUpdate:
    view: RunView
    status: str
    record: dict | None = None  # the iteration's log record, when one finished
    records: list[dict] = field(default_factory=list)  # (a call's result) every record this call logged


@dataclass
class LoadedRun:
    view: RunView
    status: str
    kind: str
    games: int
    budget: int
    options: dict[str, Any]


@dataclass
class ChosenStrategy:
    """The strategy the strategist agents of a game play: the best of a run, described for the user."""

    name: str
    source: str
    guide: dict[str, str] | None


def defaults(kind: str) -> tuple[int, int]:
    """The (evaluation games, search budget) a run of ``kind`` uses unless told otherwise."""
    game, part = domains.parse_kind(kind)
    return domains.domain_class(game).budgets[part]


def settings_for(request: ImproveRequest):
    game, part = request.validate()
    games, budget = defaults(request.kind)
    return domains.domain_class(game).make_settings(
        part, int(request.games or games), int(request.budget or budget), dict(request.options),
        workers=int(request.workers), ray_address=request.ray_address)


def continues(run_dir: str | Path | None, request: ImproveRequest) -> bool:
    """Does the run in ``run_dir`` improve what ``request`` asks (same kind; a guide run: the same side)?
    A folder with nothing saved yet is continued too."""
    if not run_dir or not Path(run_dir).is_dir():
        return False
    path = Path(run_dir)
    if not (path / "library.json").exists():
        return True
    kind, saved = loop.run_kind(path)
    if kind != request.kind:
        return False
    game, part = domains.parse_kind(kind)
    return domains.domain_class(game).same_run(part, saved, request.options)


def place(request: ImproveRequest, run_dir: str | Path | None, new_dir: Callable[[], Path]) -> ImproveRequest:
    """``request`` with the folder it runs in: ``run_dir`` when it holds a run the request continues (same
    kind; a guide run: the same side), else ``new_dir()`` — checked first, so a refused request makes none."""
    check_request(request)
    request.validate()
    return replace(request, run_dir=Path(run_dir) if continues(run_dir, request) else Path(new_dir()))


def llm_for(request: ImproveRequest) -> LLM:
    """The run's LLM (the action's model), replaying its earlier answers from the run folder's cache."""
    if request.run_dir is None:
        raise InputError("An improvement run needs its run folder.")
    return get_llm(cache=Path(request.run_dir) / "llm_cache.jsonl")


def open_run(request: ImproveRequest, run_dir: str | Path, llm: LLM | None = None) -> loop.StrategistRun:
    """The run in ``run_dir`` (resumed if it has files), its LLM replayed from the folder's cache."""
    settings = settings_for(request)
    path = Path(run_dir)
    path.mkdir(parents=True, exist_ok=True)
    llm = llm or get_llm(cache=path / "llm_cache.jsonl")
    return loop.StrategistRun(path, llm, settings, method=request.method, seed=int(request.seed))


def work(request: ImproveRequest, llm: LLM | None, cancel: CancelToken | None = None
         ) -> Iterator[ProgressEvent | ImproveUpdate]:
    """The ``games_improve`` action: ``request.iterations`` more iterations of the run in ``request.run_dir``
    (seeded first when new). Progress per LLM call and evaluated game, each finished iteration as a preview
    (an :class:`ImproveUpdate`), then the update with every record of this call. ``cancel`` stops it within
    one game or LLM answer (Cancelled); what finished is saved, and the next call goes on from there."""
    if request.run_dir is None:
        raise InputError("An improvement run needs its run folder.")
    path = Path(request.run_dir)
    if path.is_dir() and not continues(path, request):
        raise InputError(f"{path.name} holds a run of another kind; choose a new run folder.")
    run = open_run(request, path, llm)
    name, records, fraction = run.llm.name, [], 0.0
    for item in run.run(int(request.iterations), cancel):
        if isinstance(item, ProgressEvent):
            fraction = item.fraction
            yield item
            continue
        records.append({k: v for k, v in item.items() if k != "kind"})
        yield ProgressEvent(fraction, f"saved iteration {run.iteration}",
                            preview=ImproveUpdate(run_view(path), _status(run, name), records[-1]))
    yield ImproveUpdate(run_view(path), _status(run, name), records[-1] if records else None, records)


def _status(run: loop.StrategistRun, llm_name: str) -> str:
    best = run.library.top(1)
    if best and run.iteration:
        return (f"Iteration {run.iteration} · best **{best[0].id}** score {best[0].score:.3f} · "
                f"LLM calls so far {run.llm_calls} ({llm_name})")
    return "Seeded the strategy library." if best else "Seeded (no strategy could be scored)."


def improve(request: ImproveRequest, run_dir: str | Path | None, new_dir: Callable[[], Path],
            cancel: CancelToken | None = None, llm: LLM | None = None) -> Iterator[ProgressEvent | ImproveUpdate]:
    """:func:`work` on the run in ``run_dir`` when the request continues it (else in ``new_dir()``): an update
    when it starts, progress, and the last update — "Stopped after iteration N." when stopped."""
    request = place(request, run_dir, new_dir)
    llm = llm or llm_for(request)
    yield ImproveUpdate(run_view(request.run_dir), f"Running with **{llm.name}**…")
    try:
        yield from work(request, llm, cancel)
    except Cancelled:
        yield stopped(request.run_dir)


def stopped(run_dir: str | Path) -> ImproveUpdate:
    """The run after a Stop: what the iterations that finished saved."""
    done = max((r.get("iteration", 0) for r in loop.read_log(Path(run_dir) / "log.jsonl")), default=0)
    return ImproveUpdate(run_view(run_dir), f"Stopped after iteration {done}.")


def summary(update: ImproveUpdate) -> dict:
    """What a run card says of a call's result: the iterations it logged and the best strategy."""
    best = update.view.rows[0] if update.view.rows else None
    return {"iterations_logged": [r.get("iteration") for r in update.records],
            "best": best[0] if best else None, "best_score": best[4] if best else None,
            "strategies": len(update.view.rows), "status": update.status}


def run_files(update: ImproveUpdate, folder: Path) -> dict[str, Path]:
    """The run's files in ``folder`` (the run wrote them there as it went): what its card lists."""
    return {Path(name).stem: Path(folder) / name for name in loop.RUN_FILES
            if name != "run.json" and (Path(folder) / name).is_file()}


def run_view(run_dir: str | Path) -> RunView:
    path = Path(run_dir)
    library = _library(path) if (path / "library.json").exists() else loop.StrategyLibrary()
    files = [str(path / n) for n in loop.RUN_FILES if (path / n).exists()]
    return RunView(str(path), loop.score_curve(path), loop.library_rows(library), files)


def load_run(files: list[str | Path], run_dir: str | Path) -> LoadedRun:
    """A saved run's files copied into ``run_dir`` (checked first) so *Run* continues it, with the
    controls its kind and recorded settings call for."""
    path = Path(run_dir)
    library = loop.import_run_files(files, path)
    kind, saved = loop.run_kind(path)
    game, part = domains.parse_kind(kind)
    games, budget, options = domains.domain_class(game).controls(saved)
    default_games, default_budget = defaults(kind)
    best = library.top(1)
    status = (f"Loaded {len(library.items)} strategies; best **{loop.describe_origin(best[0])}**. *Run / continue* "
              f"goes on from here; the strategist agents of {game} now play its best."
              if best else f"Loaded {len(library.items)} strategies (none scored yet).")
    return LoadedRun(run_view(path), status, kind, int(games or default_games), int(budget or default_budget), options)


def strategy_source(run_dir: str | Path | None, strategy_id: str) -> tuple[str, str]:
    """A strategy of the run as text, and its diff against its parent."""
    if not run_dir or not strategy_id:
        return "", ""
    library = _library(Path(run_dir))
    if strategy_id not in library.items:
        raise InputError(f"No strategy {strategy_id!r} in this run.")
    return library.items[strategy_id].as_text(), loop.diff_against_parent(library, strategy_id)


def strategy_for_play(game: str, run_dir: str | Path | None = None) -> ChosenStrategy:
    """What the strategist agents of ``game`` play: the best strategy of the session's run when it is a
    run of that game, else of the run shipped with the suite."""
    best = loop.best_strategy(game, run_dir)
    return ChosenStrategy(loop.describe_origin(best), best.source, best.guide)


def _library(path: Path) -> loop.StrategyLibrary:
    try:
        return loop.StrategyLibrary.from_json(json.loads((path / "library.json").read_text()))
    except (OSError, ValueError, TypeError) as e:
        raise InputError(f"This run's library cannot be read ({e.__class__.__name__}); start a new run.") from None
