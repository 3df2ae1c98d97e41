"""One GOPS game as a plain-data task, so tournaments run the same anywhere (serially, in local
processes, or as Ray tasks: ``backends.common.parallel.run_tasks``)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from backends.common.errors import InputError
from backends.common.progress import CancelToken

BUILTIN_AGENTS = ("random", "greedy", "mcts")
BENCHMARK = "benchmark"  # MCTS with random-rollout leaves: STRATEGIST's fixed opponent


@dataclass(frozen=True)
class GameTask:
    p0: str  # agent name: random | greedy | mcts | a strategy's name
    p1: str
    cards: int = 6
    tie_rule: str = "discard"
    simulations: int = 300
    seed: int = 0
    p0_source: str | None = None  # strategy source (an evaluate_state function) for non-builtin agents
    p1_source: str | None = None
    p0_simulations: int | None = None  # per-seat search budgets (default: simulations)
    p1_simulations: int | None = None


def strategy_agent(source: str, name: str = "strategist", reuse: bool = False, **search):
    """MCTS with a strategy at its leaves, and its sandbox (close it when done; None when compiled or
    reused): the compiled heuristic when the strategy is the hand-written baseline (the same numbers, far
    faster), else the strategy's source in the sandbox — a long-lived shared one with ``reuse`` (the app,
    one move per call). ``search``: ``MCTSAgent``'s budget and settings."""
    from backends.games.gops.agents import MCTSAgent
    from backends.games.gops.heuristics import BASELINE_SOURCE
    from backends.games.strategist.sandbox import open_sandboxed

    if source.strip() == BASELINE_SOURCE.strip():
        return MCTSAgent("baseline", name=name, **search), None
    evaluate, fn = open_sandboxed(source, reuse)
    return MCTSAgent(evaluate, name=name, **search), fn


def build_agent(name: str, source: str | None, simulations: int):
    """An agent and, for strategies, its sandbox (to close)."""
    from backends.games.gops.agents import GreedyAgent, MCTSAgent, RandomAgent

    if source is None and name == BENCHMARK:
        return MCTSAgent("rollout", simulations=simulations, name=BENCHMARK), None
    if source is None:
        if name == "random":
            return RandomAgent(), None
        if name == "greedy":
            return GreedyAgent(), None
        if name == "mcts":
            return MCTSAgent(simulations=simulations), None
        raise InputError(f"Unknown agent {name!r}: use {', '.join(BUILTIN_AGENTS)} or a strategy file.")
    from backends.games.strategist.sandbox import SandboxedFunction

    fn = SandboxedFunction(source)
    return MCTSAgent(fn.evaluate, simulations=simulations, name=name), fn


def play_task(task: GameTask, cancel: CancelToken | None = None) -> dict:
    """Play one game; returns the names, final scores, p0's result (1 win, ½ draw, 0 loss) and the game.
    A strategy that fails in its sandbox ends the game with ``error`` and ``failed`` (its name) instead.
    ``cancel`` (the job's Stop, handed to both agents) ends it within a search batch (Cancelled)."""
    from backends.games.gops.agents import play_game
    from backends.games.gops.game import GopsConfig, GopsState
    from backends.games.strategist.sandbox import SandboxError

    rng = np.random.default_rng(task.seed)
    agents = []
    try:
        for name, src, sims in ((task.p0, task.p0_source, task.p0_simulations), (task.p1, task.p1_source,
                                                                                task.p1_simulations)):
            try:
                agents.append(build_agent(name, src, sims or task.simulations))
            except SandboxError as e:
                return {"p0": task.p0, "p1": task.p1, "error": str(e), "failed": name, "seed": task.seed}
        try:
            end = play_game((agents[0][0], agents[1][0]), GopsState.new(GopsConfig(task.cards, task.tie_rule),
                                                                        seed=task.seed), rng, cancel)
        except SandboxError as e:
            failed = task.p0 if task.p0_source is not None else task.p1
            return {"p0": task.p0, "p1": task.p1, "error": str(e), "failed": failed, "seed": task.seed}
    finally:
        for _, f in agents:
            if f is not None:
                f.close()
    return {"p0": task.p0, "p1": task.p1, "scores": list(end.scores), "p0_result": (end.returns()[0] + 1) / 2,
            "seed": task.seed, "game": json.loads(end.to_log())}


def match_tasks(a: str, a_src: str | None, b: str, b_src: str | None, games: int, cards: int, tie_rule: str,
                simulations: int, seed: int) -> list[GameTask]:
    """``games`` games between a and b, seats alternating, each with its own deal."""
    out = []
    for g in range(games):
        first = g % 2 == 0
        out.append(GameTask(a if first else b, b if first else a, cards, tie_rule, simulations, seed * 100_000 + g,
                            a_src if first else b_src, b_src if first else a_src))
    return out


def score_of(a: str, results: list[dict]) -> float:
    """a's mean result over the games of a match."""
    return float(np.mean([r["p0_result"] if r["p0"] == a else 1 - r["p0_result"] for r in results]))
