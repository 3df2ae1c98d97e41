"""STRATEGIST's improvement loop (the published ImprovementLibrary evolver), for any game domain.

A **domain** says what a strategy is, how it is scored and what feedback the LLM reflects on; each game
has one (its ``domain.py``), listed in ``backends.games.domains`` — this loop names no game. A
**strategy library** holds strategies (code runs only in the
sandbox) with their self-play scores; an **idea library** is a multi-armed bandit over improvement
ideas (UCB = mean improvement + sqrt(2·ln N / n)). One iteration:
  1. reflect — for the fittest strategies, turn self-play into feedback (for heuristics: the positions
     where the heuristic's value and the search's estimate differ most, and how the games ended), ask
     the LLM for conclusions, then for a numbered list of ideas, and add them to the bandit;
  2. implement — sample an idea (softmax over UCB), ask the LLM to apply it to the parent (the reason
     for a refusal is fed back), evaluate children and parents in the same self-play batch, reward the
     idea with score(child) − score(parent), add the children.
``method="beam"`` is the paper's ablation without the idea library: the LLM rewrites the fittest
strategies directly from their feedback, at the same number of LLM calls.

Every iteration is appended to ``log.jsonl``; the libraries are saved after each, so a run resumes.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from backends.common.errors import InputError
from backends.common.files import write_text
from backends.common.progress import CancelToken, ProgressEvent, stream_reports
from backends.games import domains
from backends.games.strategist.llm import LLM
from backends.games.strategist.sandbox import SandboxError
from backends.games.strategist.text import parse_ideas


class Domain(Protocol):
    """What the loop needs to know about a game (each game's ``domain.py``, registered in ``domains``)."""

    game: str  # the game's name in the registry
    part: str  # what children change: "heuristic" (code) | "guide" (text)
    parts: tuple[str, ...]  # what runs of this game can improve (``settings.part`` picks one when several)
    settings_type: type  # the evaluation settings (a dataclass); ``settings`` is one
    shipped_run: str  # the folder of the run shipped in assets/games-strategist
    system: str  # the system prompt: rules of the game and of the strategy's form
    noun: str  # "heuristic", "dialogue guide"
    keep: str  # what an implementation keeps: "the signature"
    answer: str  # how the LLM should format a strategy
    repair: str  # the message after a refusal, with {error}
    temperature: float
    max_tokens: int

    def baseline(self) -> dict: ...  # the hand-written strategy's fields (source, guide)
    def seed_prompt(self) -> str: ...
    def show(self, strategy: Strategy) -> str: ...  # the part being improved, for a prompt
    def parse(self, text: str) -> str: ...  # the LLM's answer → the new part, vetted (SandboxError if refused)
    def apply(self, parent: Strategy, content: str) -> dict: ...  # the child's fields
    def evaluate(self, strategies: list[Strategy], seed: int, on_game: Callable[[int, int], None] | None = None,
                 cancel: CancelToken | None = None) -> tuple[dict[str, float], dict[str, str]]: ...
    def feedback(self, strategy: Strategy, seed: int, cancel: CancelToken | None = None) -> str: ...
    @staticmethod
    def check(strategy: Strategy) -> None: ...  # vet a loaded strategy (SandboxError if refused)


Note = Callable[[float, str], None]  # (fraction of the current phase, what is happening)


def _silent(fraction: float, message: str) -> None:
    pass


# --- libraries ---------------------------------------------------------------------------------------

@dataclass
class Strategy:
    id: str
    source: str  # the value heuristic (Python source)
    origin: dict  # {"kind": hand-written | llm-seed | llm-idea | llm-beam, "llm": ..., "idea": ..., "parent": ...}
    score: float | None = None
    generation: int = 0
    history: list[float] = field(default_factory=list)
    game: str = domains.DEFAULT_GAME
    guide: dict[str, str] | None = None  # text parts of the strategy (e.g. a dialogue guide per side)

    def as_text(self) -> str:
        """The whole strategy as one text (source, then any dialogue guides as comments): what the tab
        shows and diffs."""
        import textwrap

        if not self.guide:
            return self.source
        guides = [f"# dialogue guide ({side}):\n" + textwrap.fill(text, 96, initial_indent="#   ", subsequent_indent="#   ")
                  for side, text in sorted(self.guide.items())]
        return self.source.rstrip() + "\n\n" + "\n".join(guides) + "\n"


class StrategyLibrary:
    def __init__(self, strategies: list[Strategy] | None = None):
        self.items: dict[str, Strategy] = {s.id: s for s in strategies or []}

    def add(self, strategy: Strategy) -> None:
        self.items[strategy.id] = strategy

    def top(self, k: int) -> list[Strategy]:
        scored = [s for s in self.items.values() if s.score is not None]
        return sorted(scored, key=lambda s: -s.score)[:k]

    def next_id(self) -> str:
        return f"s{len(self.items):03d}"

    def to_json(self) -> list[dict]:
        return [asdict(s) for s in self.items.values()]

    @classmethod
    def from_json(cls, data: list[dict]) -> StrategyLibrary:
        return cls([Strategy(**d) for d in data])


class IdeaLibrary:
    """UCB bandit over idea strings; a new idea has no pulls, so its bonus is large (n floored at 0.01)."""

    def __init__(self, arms: dict[str, list[float]] | None = None):
        self.arms: dict[str, list[float]] = arms or {}  # idea -> rewards

    def add(self, idea: str) -> None:
        self.arms.setdefault(idea.strip(), [])

    def ucb(self, idea: str) -> float:
        rewards = self.arms[idea]
        total = sum(len(r) for r in self.arms.values()) + 1
        n = max(len(rewards), 0.01)
        mean = float(np.mean(rewards)) if rewards else 0.0
        return mean + math.sqrt(2 * math.log(total) / n)

    def sample(self, rng: np.random.Generator, temperature: float = 1.0) -> str:
        if not self.arms:
            raise InputError("The idea library is empty.")
        ideas = list(self.arms)
        u = np.array([self.ucb(i) for i in ideas]) / temperature
        p = np.exp(u - u.max())
        return ideas[int(rng.choice(len(ideas), p=p / p.sum()))]

    def reward(self, idea: str, delta: float) -> None:
        self.arms.setdefault(idea, []).append(float(delta))


# --- the run -----------------------------------------------------------------------------------------

def write_strategy(llm: LLM, messages: list[dict], domain: Domain, seed: int, retries: int = 3,
                   cancel: CancelToken | None = None) -> tuple[str, int]:
    """Ask until the answer passes the domain's vetting (the reason for each refusal goes back to the
    LLM, as the paper's repair loop). Returns (the new part, LLM calls). ``cancel``: the job's Stop."""
    calls = 0
    for attempt in range(retries + 1):
        reply = llm.complete(messages, max_tokens=domain.max_tokens, temperature=domain.temperature,
                             seed=seed + attempt, cancel=cancel)
        calls += 1
        try:
            return domain.parse(reply.text), calls
        except SandboxError as e:
            messages = messages + [{"role": "assistant", "content": reply.text},
                                   {"role": "user", "content": domain.repair.format(error=e)}]
    raise SandboxError(f"no valid {domain.noun} after {retries + 1} attempts")


def read_log(path: Path) -> list[dict]:
    """The run's log records; a last line cut short (the process was killed while appending) is dropped."""
    lines = [x for x in path.read_text().splitlines() if x.strip()] if path.is_file() else []
    records = []
    for i, line in enumerate(lines):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if i < len(lines) - 1:
                raise
    return records


class StrategistRun:
    """One improvement run in ``run_dir`` (library.json, ideas.json, log.jsonl, strategist.json); resumes if they
    exist. ``settings`` picks the game: a domain, or the evaluation settings of a registered game's domain."""

    def __init__(self, run_dir: str | Path, llm: LLM, settings, method: str = "strategist",
                 fittest: int = 2, ideas_per_reflection: int = 3, children: int = 2, seed: int = 0):
        if method not in ("strategist", "beam"):
            raise InputError(f"Method must be 'strategist' or 'beam', got {method!r}.")
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.llm, self.method, self.seed = llm, method, seed
        self.domain: Domain = domains.for_settings(settings, llm)
        self.settings = self.domain.settings
        self.fittest, self.n_ideas, self.children = fittest, ideas_per_reflection, children
        self.library = StrategyLibrary()
        self.ideas = IdeaLibrary()
        self.iteration = 0
        self.llm_calls = 0
        if (self.dir / "library.json").exists():
            self.library = StrategyLibrary.from_json(json.loads((self.dir / "library.json").read_text()))
            games = {s.game for s in self.library.items.values()}
            if games and games != {self.domain.game}:
                raise InputError(f"This run holds {', '.join(sorted(games))} strategies, not {self.domain.game}.")
            self.ideas = IdeaLibrary(json.loads((self.dir / "ideas.json").read_text()))
            log = read_log(self.dir / "log.jsonl")
            self.iteration = max((r["iteration"] for r in log), default=0)
            self.llm_calls = sum(r.get("llm_calls", 0) for r in log)

    def _save(self, record: dict) -> None:
        write_text(self.dir / "library.json", json.dumps(self.library.to_json(), indent=1))
        write_text(self.dir / "ideas.json", json.dumps(self.ideas.arms, indent=1))
        write_text(self.dir / SETTINGS_FILE, json.dumps({"game": self.domain.game, "part": self.domain.part,
                                                           "method": self.method, "settings": asdict(self.settings)}))
        with open(self.dir / "log.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")

    def _messages(self, text: str) -> list[dict]:
        return [{"role": "system", "content": self.domain.system}, {"role": "user", "content": text}]

    def _score(self, strategies: list[Strategy], seed: int, note: Note, label: str,
               cancel: CancelToken | None) -> tuple[dict, dict]:
        scores, errors = self.domain.evaluate(strategies, seed,
                                              lambda done, total: note(done / total, f"{label}: game {done}/{total}"),
                                              cancel)
        for s in strategies:
            if s.id in scores:
                s.score = scores[s.id]
                s.history.append(scores[s.id])
        return scores, errors

    def start(self, llm_seeds: int = 1, note: Note | None = None, cancel: CancelToken | None = None) -> dict:
        """Seed the library: the hand-written baseline plus ``llm_seeds`` strategies written by the LLM.
        ``note(fraction, message)`` hears of each LLM call and evaluation game; ``cancel`` (the job's Stop) ends
        the work within an LLM answer or a game's search batch (Cancelled)."""
        note = note or _silent
        if self.library.items:
            return {"iteration": self.iteration, "resumed": True}
        d = self.domain
        base = Strategy("s000", origin={"kind": "hand-written"}, game=d.game, **d.baseline())
        self.library.add(base)
        calls = 0
        for k in range(llm_seeds):
            note(0.0, f"seeding: the LLM writes strategy {k + 1} of {llm_seeds}")
            try:
                content, c = write_strategy(self.llm, self._messages(d.seed_prompt()), d, seed=self.seed + 100 + k,
                                            cancel=cancel)
                calls += c
                self.library.add(Strategy(self.library.next_id(), origin={"kind": "llm-seed", "llm": self.llm.name},
                                          game=d.game, **d.apply(base, content)))
            except SandboxError as e:
                calls += 4
                self._save({"iteration": 0, "event": "seed_rejected", "reason": str(e)})
        scores, errors = self._score(list(self.library.items.values()), self.seed, note, "seeding: evaluation",
                                     cancel)
        self.llm_calls += calls
        record = {"iteration": 0, "event": "seeded", "game": d.game, "part": d.part, "scores": scores,
                  "errors": errors, "llm_calls": calls}
        self._save(record)
        return record

    def step(self, note: Note | None = None, cancel: CancelToken | None = None) -> dict:
        """One iteration of the chosen method; returns (and logs) what happened. ``note``, ``cancel`` as in
        :meth:`start`."""
        note = note or _silent
        self.iteration += 1
        it, calls, t0, d = self.iteration, 0, time.time(), self.domain
        parents = self.library.top(self.fittest)
        if not parents:
            raise InputError("Start the run first (the library has no scored strategies).")
        fb = {}
        for p in parents:
            note(0.0, f"iteration {it}: self-play feedback for {p.id}")
            fb[p.id] = d.feedback(p, seed=self.seed + it, cancel=cancel)
        plans: list[tuple[Strategy, str | None, list[dict]]] = []
        rng = np.random.default_rng(self.seed + it)
        if self.method == "strategist":
            for p in parents:
                base = self._messages(f"{d.show(p)}\nSelf-play feedback:\n{fb[p.id]}\n"
                                      f"What do you conclude about the {d.noun}'s mistakes?")
                note(0.0, f"iteration {it}: the LLM reflects on {p.id}")
                conclusions = self.llm.complete(base, max_tokens=300, seed=self.seed + it, cancel=cancel).text
                ideas_msg = base + [{"role": "assistant", "content": conclusions},
                                    {"role": "user", "content": f"List {self.n_ideas} concrete improvement ideas, one per line, numbered 1., 2., ..."}]
                ideas_text = self.llm.complete(ideas_msg, max_tokens=200, seed=self.seed + it, cancel=cancel).text
                calls += 2
                for idea in parse_ideas(ideas_text, self.n_ideas):
                    self.ideas.add(idea)
            for k in range(self.children):
                parent = parents[k % len(parents)]
                idea = self.ideas.sample(rng)
                plans.append((parent, idea, self._messages(f"{d.show(parent)}\nImplement this improvement, keeping "
                                                           f"{d.keep}: {idea}\n{d.answer}")))
        else:
            for k in range(self.children):
                parent = parents[k % len(parents)]
                plans.append((parent, None, self._messages(f"{d.show(parent)}\nSelf-play feedback:\n{fb[parent.id]}\n"
                                                           f"Rewrite the {d.noun} to play better. {d.answer}")))
        children, rejected = [], []
        for k, (parent, idea, msgs) in enumerate(plans):
            note(0.0, f"iteration {it}: the LLM writes child {k + 1} of {len(plans)}")
            try:
                content, c = write_strategy(self.llm, msgs, d, seed=self.seed + it * 10 + len(children), cancel=cancel)
                calls += c
            except SandboxError as e:
                calls += 4
                rejected.append({"parent": parent.id, "idea": idea, "reason": str(e)})
                continue
            origin = {"kind": "llm-idea" if idea else "llm-beam", "llm": self.llm.name, "idea": idea, "parent": parent.id}
            child = Strategy(self.library.next_id(), origin=origin, generation=parent.generation + 1, game=d.game,
                             **d.apply(parent, content))
            self.library.add(child)
            children.append(child)
        scores, errors = self._score(parents + children, self.seed + it, note, f"iteration {it}: evaluation", cancel)
        rewards = []
        for child in children:
            parent = self.library.items[child.origin["parent"]]
            if child.id in scores and child.origin.get("idea") is not None and parent.score is not None:
                delta = scores[child.id] - parent.score
                self.ideas.reward(child.origin["idea"], delta)
                rewards.append({"idea": child.origin["idea"], "delta": delta})
        self.llm_calls += calls
        best = self.library.top(1)[0]
        record = {"iteration": it, "method": self.method, "game": d.game, "part": d.part,
                  "parents": [p.id for p in parents], "children": [c.id for c in children], "scores": scores,
                  "errors": errors, "rejected": rejected, "rewards": rewards, "llm_calls": calls, "llm": self.llm.name,
                  "best": best.id, "best_score": best.score, "seconds": round(time.time() - t0, 2)}
        self._save(record)
        return record

    def run(self, iterations: int, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | dict]:
        """Seed (if new) and run ``iterations`` iterations on a worker thread, yielding progress for every LLM
        call and evaluation game, and each iteration's record (``{"kind": "record", ...}``) when it is logged.
        ``cancel`` stops the work within an LLM answer or a game's search batch (Cancelled)."""
        seeded = bool(self.library.items)
        phases = iterations + (0 if seeded else 1)

        def work(report) -> None:
            def note_for(phase: int) -> Note:
                return lambda f, message: report(ProgressEvent((phase + f) / phases, message))

            first = 0
            if not seeded:
                record = self.start(note=note_for(0), cancel=report.cancel)
                report(ProgressEvent(1 / phases, "seeded the strategy library", preview={"kind": "record", **record}))
                first = 1
            for k in range(iterations):
                record = self.step(note=note_for(first + k), cancel=report.cancel)
                report(ProgressEvent((first + k + 1) / phases, f"iteration {record['iteration']}: best "
                                     f"{record['best_score']:.3f}", preview={"kind": "record", **record}))

        for event in stream_reports(work, cancel):
            if isinstance(event, ProgressEvent):
                yield ProgressEvent(event.fraction, event.message)
                if event.preview is not None:
                    yield event.preview


# What a run improves and its evaluation settings. Runs saved before the run card (``run.json`` of
# ``backends.common.runcard``, written beside the run's files) kept this in ``run.json``: still read.
SETTINGS_FILE = "strategist.json"
LEGACY_SETTINGS_FILE = "run.json"
RUN_FILES = ("library.json", "ideas.json", "log.jsonl", SETTINGS_FILE, "run.json")


def read_settings(run_dir: str | Path) -> dict:
    """A run folder's record of what it improves ({game, part, method, settings}); {} if none. Read from
    ``strategist.json``, else from an older run's own ``run.json``, else from the run card's request."""
    path = Path(run_dir)
    for name in (SETTINGS_FILE, LEGACY_SETTINGS_FILE):
        if (path / name).is_file():
            meta = settings_of(json.loads((path / name).read_text()))
            if meta:
                return meta
    return {}


def settings_of(data) -> dict:
    """{game, part, method, settings} from a settings file's JSON or a run card of an improvement run."""
    if not isinstance(data, dict):
        return {}
    if "game" in data and "format" not in data:  # strategist.json, or an older run's run.json
        return data
    request = data.get("request") if data.get("capability") == "games" else None
    if isinstance(request, dict) and isinstance(request.get("kind"), str):  # a run card
        game, part = domains.parse_kind(request["kind"])
        settings = {k: request[k] for k in ("num_cards", "num_players", "guide_side") if k in request}
        return {"game": game, "part": part, "method": request.get("method", "strategist"),
                "settings": settings or dict(request.get("options") or {})}  # cards before 2026-12: "options"
    return {}


def import_run_files(files: list[str | Path], run_dir: Path) -> StrategyLibrary:
    """A saved run (its library.json, and ideas.json / log.jsonl when given) copied into ``run_dir`` so
    the run continues from it; the library is checked before anything is written."""
    by_name = {Path(f).name: Path(f) for f in files}
    if "library.json" not in by_name:
        raise InputError("Load a run's library.json (and, to continue the run, its ideas.json and log.jsonl).")
    try:
        data = json.loads(by_name["library.json"].read_text())
        library = StrategyLibrary.from_json(data)
        for s in library.items.values():
            domains.domain_class(s.game).check(s)
        if len({s.game for s in library.items.values()}) > 1:
            raise ValueError("strategies of different games")
        ideas = json.loads(by_name["ideas.json"].read_text()) if "ideas.json" in by_name else {}
        IdeaLibrary(ideas)
        # what the run improves: its settings file, an older run's run.json, or its run card's request
        meta = next((m for m in (settings_of(json.loads(by_name[n].read_text()))
                                 for n in (SETTINGS_FILE, LEGACY_SETTINGS_FILE) if n in by_name) if m), {})
    except (ValueError, TypeError, KeyError) as e:
        raise InputError(f"Not a strategy library: {e.__class__.__name__}: {e}") from None
    except SandboxError as e:
        raise InputError(f"A strategy in that library was refused: {e}") from None
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text(run_dir / "library.json", json.dumps(data, indent=1))
    write_text(run_dir / "ideas.json", json.dumps(ideas, indent=1))
    log = by_name["log.jsonl"].read_text() if "log.jsonl" in by_name else ""
    write_text(run_dir / "log.jsonl", log)
    if meta:
        write_text(run_dir / SETTINGS_FILE, json.dumps(meta))
    return library


def best_of_library(path: str | Path, game: str | None = None) -> Strategy:
    """The top-scored strategy of a saved library (a run folder or its ``library.json``), of ``game`` if given."""
    path = Path(path)
    path = path / "library.json" if path.is_dir() else path
    try:
        library = StrategyLibrary.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError) as e:
        raise InputError(f"No readable strategy library at {path.name}: {e.__class__.__name__}") from None
    if game is not None and any(s.game != game for s in library.items.values()):
        raise InputError(f"That strategy library is not for {game}.")
    best = library.top(1)
    if not best:
        raise InputError("That strategy library has no scored strategy yet.")
    return best[0]


def run_kind(run_dir: str | Path) -> tuple[str, dict]:
    """What a run folder improves — the game, or "game-part" for games whose runs improve one of several
    parts — and the evaluation settings it recorded. Runs saved before a settings file existed:
    the game of their strategies."""
    path = Path(run_dir)
    meta = read_settings(path)
    game = meta.get("game")
    if game is None and (path / "library.json").exists():
        saved = {s.get("game", domains.DEFAULT_GAME) for s in json.loads((path / "library.json").read_text())}
        game = next(iter(saved), None)
    game = game or domains.DEFAULT_GAME
    return domains.kind_of(game, meta.get("part", domains.domain_class(game).parts[0])), meta.get("settings", {})


def best_strategy(game: str, run_dir: str | Path | None = None) -> Strategy:
    """The best strategy for ``game``: of the session's run when it is a run of that game, else of the
    run shipped with the suite."""
    if run_dir and (Path(run_dir) / "library.json").exists():
        try:
            return best_of_library(run_dir, game)
        except InputError:
            pass  # a run of the other game, or nothing scored yet
    return best_of_library(domains.shipped_library(game), game)


def describe_origin(s: Strategy) -> str:
    kind = s.origin.get("kind", "?")
    return f"{s.id}: {kind}" + (f" by {s.origin['llm']}" if s.origin.get("llm") else "")


# --- views for the tab and the CLI ---------------------------------------------------------------------

def library_rows(library: StrategyLibrary) -> list[list]:
    """id, origin, idea, parent, score, generation — best first."""
    rows = []
    for s in sorted(library.items.values(), key=lambda s: -(s.score if s.score is not None else -1)):
        origin = s.origin.get("kind", "")
        if s.origin.get("llm"):
            origin += f" ({s.origin['llm']})"
        rows.append([s.id, origin, s.origin.get("idea") or "", s.origin.get("parent") or "",
                     None if s.score is None else round(s.score, 3), s.generation])
    return rows


def score_curve(run_dir: Path) -> list[dict]:
    """Best score of the library after each logged iteration."""
    out = []
    for rec in read_log(Path(run_dir) / "log.jsonl"):
        if rec.get("event") == "seeded":
            out.append({"iteration": 0, "best score": max(rec["scores"].values(), default=0.0)})
        elif "best_score" in rec:
            out.append({"iteration": rec["iteration"], "best score": rec["best_score"]})
    return out


def diff_against_parent(library: StrategyLibrary, strategy_id: str) -> str:
    import difflib

    s = library.items.get(strategy_id)
    if s is None:
        raise InputError(f"No strategy {strategy_id!r} in this run.")
    parent = library.items.get(s.origin.get("parent") or "")
    if parent is None:
        return "(no parent: this strategy was written from scratch)"
    return "".join(difflib.unified_diff(parent.as_text().splitlines(True), s.as_text().splitlines(True),
                                        fromfile=parent.id, tofile=s.id))
