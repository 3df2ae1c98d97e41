"""STRATEGIST improvement runs as backend calls: what the Improve tab and ``iclr25-studio games improve``
both call, so the rules live once — which run a request continues, each game's default budget, the
evaluation settings, reading a run's library and choosing the strategy the strategist agents play.

A run is of one **kind** (``domains.run_kinds()``: a game, or "game-part" for games with several parts)
and lives in a folder (library.json, ideas.json, log.jsonl, run.json, the LLM's replay cache).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken, ProgressEvent
from backends.games import domains
from backends.games.strategist import loop
from backends.games.strategist.llm import LLM, get_llm

METHODS = ("strategist", "beam")


@dataclass
class ImproveRequest:
    kind: str = domains.DEFAULT_GAME  # what to improve: a key of domains.run_kinds()
    iterations: int = 2
    method: str = "strategist"  # or "beam", the paper's ablation without the idea library
    games: int | None = None  # evaluation games (per pairing or per strategy); None: the game's default
    budget: int | None = None  # search budget per move / decision; None: the game's default
    options: dict[str, Any] = field(default_factory=dict)  # the game's own, e.g. num_cards, guide_side
    seed: int = 0
    workers: int = 1  # local processes for the self-play games
    ray_address: str | None = None  # or Ray tasks on this cluster

    def validate(self) -> tuple[str, str]:
        """(game, part); InputError with a sentence for anything out of range."""
        game, part = domains.parse_kind(self.kind)
        if self.method not in METHODS:
            raise InputError(f"Method must be one of {', '.join(METHODS)}, got {self.method!r}.")
        if not 1 <= int(self.iterations) <= 100:
            raise InputError(f"Iterations must be 1 to 100, got {self.iterations!r}.")
        for name in ("games", "budget"):
            value = getattr(self, name)
            if value is not None and not 1 <= int(value) <= 10_000:
                raise InputError(f"{name.capitalize()} must be 1 to 10000, got {value!r}.")
        if int(self.seed) < 0:
            raise InputError("The seed must be 0 or more.")
        return game, part


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


def open_run(request: ImproveRequest, run_dir: str | Path, llm: LLM | None = None) -> loop.StrategistRun:
    """The run in ``run_dir`` (resumed if it has files), its LLM replayed from the folder's cache."""
    settings = settings_for(request)
    path = Path(run_dir)
    path.mkdir(parents=True, exist_ok=True)
    llm = llm or get_llm(cache=path / "llm_cache.jsonl")
    return loop.StrategistRun(path, llm, settings, method=request.method, seed=int(request.seed))


def improve(request: ImproveRequest, run_dir: str | Path | None, new_dir: Callable[[], Path],
            cancel: CancelToken | None = None, llm: LLM | None = None) -> Iterator[ProgressEvent | ImproveUpdate]:
    """Run ``request.iterations`` iterations, continuing ``run_dir`` when it holds a run of the same kind
    (else a new run in ``new_dir()``). Yields progress (per evaluated game) and an update after seeding,
    after each iteration and when stopped (``cancel``: within one game)."""
    request.validate()
    path = Path(run_dir) if continues(run_dir, request) else new_dir()
    run = open_run(request, path, llm)
    name = run.llm.name
    yield ImproveUpdate(run_view(path), f"Running with **{name}**…")
    try:
        for item in run.run(int(request.iterations), cancel):
            if isinstance(item, ProgressEvent):
                yield item
                continue
            best = run.library.top(1)
            status = (f"Iteration {run.iteration} · best **{best[0].id}** score {best[0].score:.3f} · "
                      f"LLM calls so far {run.llm_calls} ({name})") if best and run.iteration else \
                "Seeded the strategy library." if best else "Seeded (no strategy could be scored)."
            yield ImproveUpdate(run_view(path), status, item)
    except Cancelled:
        yield ImproveUpdate(run_view(path), f"Stopped after iteration {run.iteration}.")


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
