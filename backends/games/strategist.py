"""STRATEGIST's improvement loop for GOPS value heuristics (the published ImprovementLibrary evolver).

A **strategy library** holds heuristics (Python source, run only in the sandbox) with their self-play
scores; an **idea library** is a multi-armed bandit over improvement ideas (UCB = mean improvement +
sqrt(2·ln N / n)). One iteration:
  1. reflect — for the fittest strategies, turn self-play into feedback (the positions where the
     heuristic's value and the MCTS estimate made with it differ most, and how the game ended), ask the
     LLM for conclusions, then for a numbered list of ideas, and add them to the bandit;
  2. implement — sample an idea (softmax over UCB), ask the LLM to apply it to the parent (same
     signature; the sandbox's error is fed back on failure), evaluate children and parents in the same
     self-play batch, reward the idea with score(child) − score(parent), add the children.
``method="beam"`` is the paper's ablation without the idea library: the LLM rewrites the fittest
strategies directly from their feedback, at the same number of LLM calls.

Every iteration is appended to ``log.jsonl``; the libraries are saved after each, so a run resumes.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from backends.common.errors import InputError
from backends.common.progress import CancelToken, ProgressEvent

from .gops import GopsConfig, GopsState
from .gops_agents import MCTSAgent
from .gops_heuristics import (
    BASELINE_SOURCE,
    STATE_DOC,
    sandboxed_heuristic,
    state_dict,
)
from .llm import LLM
from .sandbox import SandboxedFunction, SandboxError, SandboxLimits, check_source

# --- libraries ---------------------------------------------------------------------------------------

@dataclass
class Strategy:
    id: str
    source: str
    origin: dict  # {"kind": hand-written | llm-seed | llm-idea | llm-beam, "llm": ..., "idea": ..., "parent": ...}
    score: float | None = None
    generation: int = 0
    history: list[float] = field(default_factory=list)


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


# --- evaluation by self-play -------------------------------------------------------------------------

@dataclass
class EvalSettings:
    num_cards: int = 6
    tie_rule: str = "discard"
    games_per_pair: int = 4
    simulations: int = 16  # STRATEGIST's search budget per move
    benchmark_rollouts: int = 16
    workers: int = 1  # local processes for the self-play games
    ray_address: str | None = None  # or run them as Ray tasks ("local", "auto", "ray://host:10001")


def _agent(strategy_fn, simulations: int) -> MCTSAgent:
    return MCTSAgent(strategy_fn.evaluate, simulations=simulations)


def evaluate(strategies: list[Strategy], settings: EvalSettings, seed: int = 0) -> tuple[dict[str, float], dict[str, str]]:
    """Round-robin self-play (seats swapped) among the strategies and a benchmark MCTS with random
    rollouts; score = mean result (win 1, draw ½). Strategies that fail in the sandbox get no score.
    Every game is a task (``gops_games.play_task``), run serially, in processes or on Ray."""
    from backends.common.parallel import run_tasks

    from .gops_games import BENCHMARK, GameTask, play_task

    rng = np.random.default_rng(seed)
    config = GopsConfig(settings.num_cards, settings.tie_rule)
    sources, errors = {}, {}
    for s in strategies:  # a quick probe first: broken code never reaches the games
        try:
            with SandboxedFunction(s.source, limits=SandboxLimits(seconds_per_call=1.0)) as fn:
                fn.evaluate([state_dict(GopsState.new(config, seed=0))])
            sources[s.id] = s.source
        except SandboxError as e:
            errors[s.id] = str(e)
    sims = {sid: settings.simulations for sid in sources} | {BENCHMARK: settings.benchmark_rollouts}
    ids = [*sources, BENCHMARK]
    tasks = []
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            for g in range(settings.games_per_pair):
                p0, p1 = (a, b) if g % 2 == 0 else (b, a)
                tasks.append(GameTask(p0, p1, settings.num_cards, settings.tie_rule, settings.simulations,
                                      int(rng.integers(2**31)), sources.get(p0), sources.get(p1), sims[p0], sims[p1]))
    results: dict[str, list[float]] = {k: [] for k in ids}
    for r in run_tasks(play_task, tasks, ray_address=settings.ray_address, workers=settings.workers):
        if "error" in r:
            errors[r["failed"]] = r["error"]
            continue
        results[r["p0"]].append(r["p0_result"])
        results[r["p1"]].append(1 - r["p0_result"])
    scores = {k: float(np.mean(v)) for k, v in results.items() if v and k != BENCHMARK and k not in errors}
    return scores, errors


def feedback(strategy: Strategy, settings: EvalSettings, seed: int = 0, games: int = 2, worst: int = 5) -> str:
    """Self-play against the benchmark, as text: positions where the heuristic and its search disagree most."""
    rng = np.random.default_rng(seed)
    config = GopsConfig(settings.num_cards, settings.tie_rule)
    rows, outcomes = [], []
    with SandboxedFunction(strategy.source) as fn:
        me = _agent(fn, max(settings.simulations, 32))
        heuristic = sandboxed_heuristic(fn)
        bench = MCTSAgent("rollout", simulations=settings.benchmark_rollouts)
        total = config.num_cards * (config.num_cards + 1) / 2
        for g in range(games):
            s = GopsState.new(config, seed=int(rng.integers(2**31)))
            while not s.is_terminal:
                (v0, v1), extra = heuristic(s)
                card = me.act(s, 0, rng)
                stats = me.describe_last_move()
                idx = stats["cards"].index(card)
                est = stats["mean_value"][idx] * total  # search estimate of p0 − p1 after this bid
                rows.append((abs((v0 - v1) - est), state_dict(s), (v0, v1), extra, est, card, g))
                s = s.apply(card, bench.act(s, 1, rng))
            outcomes.append(s.scores)
    rows.sort(key=lambda r: -r[0])
    lines = [f"Game {g + 1} ended {a:g} : {b:g} (you are player 0)." for g, (a, b) in enumerate(outcomes)]
    for _, st, (v0, v1), extra, est, card, g in rows[:worst]:
        lines.append(f"- game {g + 1}, state {json.dumps(st)}: your heuristic said p0−p1 = {v0 - v1:.1f} "
                     f"(intermediate {json.dumps(extra)}), the search with it estimated {est:.1f} after bidding {card}.")
    return "\n".join(lines)


# --- prompts and parsing ------------------------------------------------------------------------------

SYSTEM = ("You improve value heuristics for the card game GOPS (Game of Pure Strategy). Each round both players "
          "secretly bid one card for the prize on the table; the higher bid wins the prize's points. "
          "A heuristic is a Python function evaluate_state(state) used at the leaves of Monte-Carlo tree search.\n"
          + STATE_DOC + "\nRules for code: no imports (math is available), no attributes except list/dict methods, "
          "no names starting with '_', no simulations of whole games.")


def parse_ideas(text: str, limit: int = 5) -> list[str]:
    ideas = [m.group(1).strip() for m in re.finditer(r"^\s*\d+\s*[.)]+\s*(.+)$", text, re.MULTILINE)]
    return [i for i in ideas if len(i) > 5][:limit]


def extract_code(text: str) -> str:
    blocks = re.findall(r"```(?:python)?\s*\n(.*?)```", text, re.DOTALL)
    for block in blocks:
        if "def evaluate_state" in block:
            return block.strip() + "\n"
    i = text.find("def evaluate_state")
    if i < 0:
        raise SandboxError("the answer contains no function evaluate_state")
    return text[i:].strip() + "\n"


def write_code(llm: LLM, messages: list[dict], seed: int, retries: int = 3) -> tuple[str, int]:
    """Ask for code until it passes the sandbox (each failure's reason goes back to the LLM). Returns (code, calls)."""
    calls = 0
    probe = [state_dict(GopsState.new(GopsConfig(6), seed=seed))]
    for attempt in range(retries + 1):
        # code at a low temperature: small models drift into invalid text at 0.7
        reply = llm.complete(messages, max_tokens=600, temperature=0.3, seed=seed + attempt)
        calls += 1
        try:
            code = extract_code(reply.text)
            check_source(code)
            with SandboxedFunction(code) as fn:
                fn.evaluate(probe)
            return code, calls
        except SandboxError as e:
            messages = messages + [{"role": "assistant", "content": reply.text},
                                   {"role": "user", "content": f"That code was rejected: {e}. Fix it and answer with the whole function."}]
    raise SandboxError(f"no valid code after {retries + 1} attempts")


# --- the run -----------------------------------------------------------------------------------------

class StrategistRun:
    """One improvement run in ``run_dir`` (library.json, ideas.json, log.jsonl); resumes if they exist."""

    def __init__(self, run_dir: str | Path, llm: LLM, settings: EvalSettings | None = None, method: str = "strategist",
                 fittest: int = 2, ideas_per_reflection: int = 3, children: int = 2, seed: int = 0):
        if method not in ("strategist", "beam"):
            raise InputError(f"Method must be 'strategist' or 'beam', got {method!r}.")
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.llm, self.method, self.seed = llm, method, seed
        self.settings = settings or EvalSettings()
        self.fittest, self.n_ideas, self.children = fittest, ideas_per_reflection, children
        self.library = StrategyLibrary()
        self.ideas = IdeaLibrary()
        self.iteration = 0
        self.llm_calls = 0
        if (self.dir / "library.json").exists():
            self.library = StrategyLibrary.from_json(json.loads((self.dir / "library.json").read_text()))
            self.ideas = IdeaLibrary(json.loads((self.dir / "ideas.json").read_text()))
            log = [json.loads(x) for x in (self.dir / "log.jsonl").read_text().splitlines() if x.strip()]
            self.iteration = max((r["iteration"] for r in log), default=0)
            self.llm_calls = sum(r.get("llm_calls", 0) for r in log)

    def _save(self, record: dict) -> None:
        (self.dir / "library.json").write_text(json.dumps(self.library.to_json(), indent=1))
        (self.dir / "ideas.json").write_text(json.dumps(self.ideas.arms, indent=1))
        with open(self.dir / "log.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")

    def start(self, llm_seeds: int = 1) -> dict:
        """Seed the library: the hand-written baseline plus ``llm_seeds`` strategies written by the LLM."""
        if self.library.items:
            return {"iteration": self.iteration, "resumed": True}
        self.library.add(Strategy("s000", BASELINE_SOURCE.strip() + "\n", {"kind": "hand-written"}))
        calls = 0
        for k in range(llm_seeds):
            msgs = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": "Write a good evaluate_state(state) for GOPS. Think about which cards "
                     "are worth spending on which prizes. This simple baseline shows the required form:\n```python\n"
                     f"{BASELINE_SOURCE.strip()}\n```\nWrite a different, better one. Answer with one ```python``` block."}]
            try:
                code, c = write_code(self.llm, msgs, seed=self.seed + 100 + k)
                calls += c
                self.library.add(Strategy(self.library.next_id(), code, {"kind": "llm-seed", "llm": self.llm.name}))
            except SandboxError as e:
                calls += 4
                self._save({"iteration": 0, "event": "seed_rejected", "reason": str(e)})
        scores, errors = evaluate(list(self.library.items.values()), self.settings, seed=self.seed)
        for sid, sc in scores.items():
            self.library.items[sid].score = sc
            self.library.items[sid].history.append(sc)
        self.llm_calls += calls
        record = {"iteration": 0, "event": "seeded", "scores": scores, "errors": errors, "llm_calls": calls}
        self._save(record)
        return record

    def step(self) -> dict:
        """One iteration of the chosen method; returns (and logs) what happened."""
        self.iteration += 1
        it, calls, t0 = self.iteration, 0, time.time()
        parents = self.library.top(self.fittest)
        if not parents:
            raise InputError("Start the run first (the library has no scored strategies).")
        fb = {p.id: feedback(p, self.settings, seed=self.seed + it) for p in parents}
        plans: list[tuple[Strategy, str | None, list[dict]]] = []
        rng = np.random.default_rng(self.seed + it)
        if self.method == "strategist":
            for p in parents:
                base = [{"role": "system", "content": SYSTEM},
                        {"role": "user", "content": f"Heuristic:\n```python\n{p.source}```\nSelf-play feedback:\n{fb[p.id]}\n"
                         "What do you conclude about the heuristic's mistakes?"}]
                conclusions = self.llm.complete(base, max_tokens=300, seed=self.seed + it).text
                ideas_msg = base + [{"role": "assistant", "content": conclusions},
                                    {"role": "user", "content": f"List {self.n_ideas} concrete improvement ideas, one per line, numbered 1., 2., ..."}]
                ideas_text = self.llm.complete(ideas_msg, max_tokens=200, seed=self.seed + it).text
                calls += 2
                for idea in parse_ideas(ideas_text, self.n_ideas):
                    self.ideas.add(idea)
            for k in range(self.children):
                parent = parents[k % len(parents)]
                idea = self.ideas.sample(rng)
                msgs = [{"role": "system", "content": SYSTEM},
                        {"role": "user", "content": f"Heuristic:\n```python\n{parent.source}```\nImplement this improvement, "
                         f"keeping the signature: {idea}\nAnswer with the whole function in one ```python``` block."}]
                plans.append((parent, idea, msgs))
        else:
            for k in range(self.children):
                parent = parents[k % len(parents)]
                msgs = [{"role": "system", "content": SYSTEM},
                        {"role": "user", "content": f"Heuristic:\n```python\n{parent.source}```\nSelf-play feedback:\n"
                         f"{fb[parent.id]}\nRewrite the heuristic to play better. Answer with the whole function in one "
                         "```python``` block."}]
                plans.append((parent, None, msgs))
        children, rejected = [], []
        for parent, idea, msgs in plans:
            try:
                code, c = write_code(self.llm, msgs, seed=self.seed + it * 10 + len(children))
                calls += c
            except SandboxError as e:
                calls += 4
                rejected.append({"parent": parent.id, "idea": idea, "reason": str(e)})
                continue
            origin = {"kind": "llm-idea" if idea else "llm-beam", "llm": self.llm.name, "idea": idea, "parent": parent.id}
            child = Strategy(self.library.next_id(), code, origin, generation=parent.generation + 1)
            self.library.add(child)
            children.append(child)
        scores, errors = evaluate(parents + children, self.settings, seed=self.seed + it)
        for s in parents + children:
            if s.id in scores:
                s.score = scores[s.id]
                s.history.append(scores[s.id])
        rewards = []
        for child in children:
            parent = self.library.items[child.origin["parent"]]
            if child.id in scores and child.origin.get("idea") is not None and parent.score is not None:
                delta = scores[child.id] - parent.score
                self.ideas.reward(child.origin["idea"], delta)
                rewards.append({"idea": child.origin["idea"], "delta": delta})
        self.llm_calls += calls
        best = self.library.top(1)[0]
        record = {"iteration": it, "method": self.method, "parents": [p.id for p in parents],
                  "children": [c.id for c in children], "scores": scores, "errors": errors, "rejected": rejected,
                  "rewards": rewards, "llm_calls": calls, "llm": self.llm.name, "best": best.id,
                  "best_score": best.score, "seconds": round(time.time() - t0, 2)}
        self._save(record)
        return record

    def run(self, iterations: int, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | dict]:
        if not self.library.items:
            yield ProgressEvent(0.0, "seeding the strategy library")
            yield {"kind": "record", **self.start()}
        for k in range(iterations):
            if cancel is not None:
                cancel.raise_if_cancelled()
            record = self.step()
            yield ProgressEvent((k + 1) / iterations, f"iteration {record['iteration']}: best {record['best_score']:.3f}")
            yield {"kind": "record", **record}


RUN_FILES = ("library.json", "ideas.json", "log.jsonl")


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
            check_source(s.source)
        ideas = json.loads(by_name["ideas.json"].read_text()) if "ideas.json" in by_name else {}
        IdeaLibrary(ideas)
    except (ValueError, TypeError, KeyError) as e:
        raise InputError(f"Not a strategy library: {e.__class__.__name__}: {e}") from None
    except SandboxError as e:
        raise InputError(f"A strategy in that library was refused: {e}") from None
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "library.json").write_text(json.dumps(data, indent=1))
    (run_dir / "ideas.json").write_text(json.dumps(ideas, indent=1))
    log = by_name["log.jsonl"].read_text() if "log.jsonl" in by_name else ""
    (run_dir / "log.jsonl").write_text(log)
    return library


def best_of_library(path: str | Path) -> Strategy:
    """The top-scored strategy of a saved library (a run folder or its ``library.json``)."""
    path = Path(path)
    path = path / "library.json" if path.is_dir() else path
    try:
        library = StrategyLibrary.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError) as e:
        raise InputError(f"No readable strategy library at {path.name}: {e.__class__.__name__}") from None
    best = library.top(1)
    if not best:
        raise InputError("That strategy library has no scored strategy yet.")
    return best[0]


def shipped_library() -> Path:
    """The library of the STRATEGIST run shipped with the suite (``assets/games-strategist``)."""
    from backends.common.settings import get_settings

    return get_settings().assets_dir / "games-strategist" / "strategist" / "library.json"


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
    path = Path(run_dir) / "log.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
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
    return "".join(difflib.unified_diff(parent.source.splitlines(True), s.source.splitlines(True),
                                        fromfile=parent.id, tofile=s.id))
