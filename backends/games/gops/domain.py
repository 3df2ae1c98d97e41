"""STRATEGIST's GOPS domain: what a GOPS strategy is (a value heuristic, Python source run in the
sandbox), how it is scored (round-robin self-play of MCTS with each heuristic at its leaves, plus a
benchmark MCTS with random-rollout leaves), and the feedback the LLM reflects on (the positions where
the heuristic and the search made with it disagree most). The loop itself is ``strategist.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from backends.common.errors import InputError
from backends.common.progress import CancelToken, raise_if_cancelled
from backends.games.gops.agents import MCTSAgent
from backends.games.gops.game import GopsConfig, GopsState
from backends.games.gops.heuristics import BASELINE_SOURCE, STATE_DOC, sandboxed_heuristic, state_dict
from backends.games.strategist.sandbox import (
    SandboxedFunction,
    SandboxError,
    SandboxLimits,
    check_source,
)
from backends.games.strategist.text import extract_code


@dataclass
class EvalSettings:
    num_cards: int = 6
    tie_rule: str = "discard"
    games_per_pair: int = 4
    simulations: int = 16  # STRATEGIST's search budget per move
    benchmark_rollouts: int = 16
    workers: int = 1  # local processes for the self-play games
    ray_address: str | None = None  # or run them as Ray tasks ("local", "auto", "ray://host:10001")


SYSTEM = ("You improve value heuristics for the card game GOPS (Game of Pure Strategy). Each round both players "
          "secretly bid one card for the prize on the table; the higher bid wins the prize's points. "
          "A heuristic is a Python function evaluate_state(state) used at the leaves of Monte-Carlo tree search.\n"
          + STATE_DOC + "\nRules for code: no imports (math is available), no attributes except list/dict methods, "
          "no names starting with '_', no simulations of whole games.")


def evaluate(strategies: list, settings: EvalSettings, seed: int = 0,
             on_game: Callable[[int, int], None] | None = None,
             cancel: CancelToken | None = None) -> tuple[dict[str, float], dict[str, str]]:
    """Round-robin self-play (seats swapped) among the strategies and a benchmark MCTS with random
    rollouts; score = mean result (win 1, draw ½). Strategies that fail in the sandbox get no score.
    Every game is a task (``selfplay.play_task``), run serially, in processes or on Ray; ``on_game(done,
    total)`` hears of each finished game (progress); ``cancel`` (the job's Stop) ends the evaluation within a
    search batch of the game under way, wherever it runs (Cancelled)."""
    from backends.common.parallel import run_tasks
    from backends.games.gops.selfplay import BENCHMARK, GameTask, play_task

    rng = np.random.default_rng(seed)
    config = GopsConfig(settings.num_cards, settings.tie_rule)
    sources, errors = {}, {}
    for s in strategies:  # a quick probe first: broken code never reaches the games
        raise_if_cancelled(cancel)
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
    for r in run_tasks(play_task, tasks, ray_address=settings.ray_address, workers=settings.workers,
                       on_done=on_game, cancel=cancel):
        if "error" in r:
            errors[r["failed"]] = r["error"]
            continue
        results[r["p0"]].append(r["p0_result"])
        results[r["p1"]].append(1 - r["p0_result"])
    scores = {k: float(np.mean(v)) for k, v in results.items() if v and k != BENCHMARK and k not in errors}
    return scores, errors


def feedback(strategy, settings: EvalSettings, seed: int = 0, games: int = 2, worst: int = 5,
             cancel: CancelToken | None = None) -> str:
    """Self-play against the benchmark, as text: positions where the heuristic and its search disagree most.
    ``cancel`` (the job's Stop) ends it within a search batch (Cancelled)."""
    rng = np.random.default_rng(seed)
    config = GopsConfig(settings.num_cards, settings.tie_rule)
    rows, outcomes = [], []
    with SandboxedFunction(strategy.source) as fn:
        me = MCTSAgent(fn.evaluate, simulations=max(settings.simulations, 32))
        heuristic = sandboxed_heuristic(fn, cancel)
        bench = MCTSAgent("rollout", simulations=settings.benchmark_rollouts)
        me.cancel = bench.cancel = cancel
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
                s = s.apply({0: card, 1: bench.act(s, 1, rng)})
            outcomes.append(s.scores)
    rows.sort(key=lambda r: -r[0])
    lines = [f"Game {g + 1} ended {a:g} : {b:g} (you are player 0)." for g, (a, b) in enumerate(outcomes)]
    for _, st, (v0, v1), extra, est, card, g in rows[:worst]:
        lines.append(f"- game {g + 1}, state {json.dumps(st)}: your heuristic said p0−p1 = {v0 - v1:.1f} "
                     f"(intermediate {json.dumps(extra)}), the search with it estimated {est:.1f} after bidding {card}.")
    return "\n".join(lines)


class GopsDomain:
    """GOPS value heuristics (the code part; GOPS strategies have no dialogue)."""

    game, part = "gops", "heuristic"
    parts = ("heuristic",)  # what a run of this game can improve
    settings_type = EvalSettings
    shipped_run = "strategist"  # the run shipped in assets/games-strategist
    system = SYSTEM
    noun, keep = "heuristic", "the signature"
    answer = "Answer with the whole function in one ```python``` block."
    repair = "That code was rejected: {error}. Fix it and answer with the whole function."
    temperature, max_tokens = 0.3, 600  # code at a low temperature: small models drift into invalid text at 0.7

    labels = {"heuristic": "GOPS value heuristic"}  # what the Improve choices call a run of each part
    budgets = {"heuristic": (4, 16)}  # default (self-play games per pairing, MCTS simulations per move)

    def __init__(self, settings: EvalSettings | None = None, llm=None):
        self.settings = settings or EvalSettings()

    @classmethod
    def make_settings(cls, part: str, games: int, budget: int, options: dict, workers: int = 1,
                      ray_address: str | None = None) -> EvalSettings:
        """Evaluation settings from an improvement request (``options``: ``num_cards``, default 6)."""
        cards = int(options.get("num_cards", 6))
        if not 3 <= cards <= 13:
            raise InputError(f"GOPS is played with 3 to 13 cards per suit, got {cards}.")
        return EvalSettings(cards, "discard", games, budget, workers=workers, ray_address=ray_address)

    @classmethod
    def controls(cls, saved: dict) -> tuple[int | None, int | None, dict]:
        """A saved run's settings as (games, search budget, options): what the controls show on loading it."""
        return saved.get("games_per_pair"), saved.get("simulations"), {"num_cards": saved.get("num_cards", 6)}

    @classmethod
    def same_run(cls, part: str, saved: dict, options: dict) -> bool:
        """Can a run with ``saved`` settings go on under these options? (GOPS: any card count.)"""
        return True

    @staticmethod
    def check(strategy) -> None:
        """Vet a loaded strategy before it is kept (SandboxError if its code is refused)."""
        check_source(strategy.source)

    def baseline(self) -> dict:
        return {"source": BASELINE_SOURCE.strip() + "\n"}

    def seed_prompt(self) -> str:
        return ("Write a good evaluate_state(state) for GOPS. Think about which cards are worth spending on which "
                "prizes. This simple baseline shows the required form:\n```python\n"
                f"{BASELINE_SOURCE.strip()}\n```\nWrite a different, better one. Answer with one ```python``` block.")

    def show(self, strategy) -> str:
        return f"Heuristic:\n```python\n{strategy.source}```"

    def parse(self, text: str) -> str:
        code = extract_code(text)
        check_source(code)
        with SandboxedFunction(code) as fn:
            fn.evaluate([state_dict(GopsState.new(GopsConfig(6), seed=0))])
        return code

    def apply(self, parent, content: str) -> dict:
        return {"source": content}

    def evaluate(self, strategies: list, seed: int, on_game=None,
                 cancel: CancelToken | None = None) -> tuple[dict[str, float], dict[str, str]]:
        return evaluate(strategies, self.settings, seed, on_game, cancel)

    def feedback(self, strategy, seed: int, cancel: CancelToken | None = None) -> str:
        return feedback(strategy, self.settings, seed=seed, cancel=cancel)
