"""``iclr25-studio games``: batch runs of the Strategy Games capability.

    iclr25-studio games selfplay --a mcts --b greedy --games 100 --cards 13 --out games.jsonl
    iclr25-studio games tournament --agents random greedy mcts --games 20 --cards 6
    iclr25-studio games improve --run-dir runs/gops --iterations 5 [--method beam]   (needs an LLM endpoint)

Agents: random, greedy, mcts (baseline heuristic), or a path to a strategy source file (a sandboxed
``evaluate_state`` used at the leaves of MCTS). Every game is one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
from itertools import combinations
from pathlib import Path

import numpy as np

from backends.common.errors import InputError

AGENTS = ("random", "greedy", "mcts")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="games_command", required=True)
    sp = sub.add_parser("selfplay", help="one agent against another, seats alternating")
    sp.add_argument("--a", default="mcts")
    sp.add_argument("--b", default="random")
    tp = sub.add_parser("tournament", help="round robin among agents")
    tp.add_argument("--agents", nargs="+", default=list(AGENTS))
    for q in (sp, tp):
        q.add_argument("--games", type=int, default=20)
        q.add_argument("--cards", type=int, default=6)
        q.add_argument("--tie-rule", default="discard", choices=("discard", "carry"))
        q.add_argument("--simulations", type=int, default=300)
        q.add_argument("--seed", type=int, default=0)
        q.add_argument("--out", type=Path, help="write every game as a JSON line here")
    ip = sub.add_parser("improve", help="run STRATEGIST iterations (resumes an existing run dir)")
    ip.add_argument("--run-dir", type=Path, required=True)
    ip.add_argument("--iterations", type=int, default=3)
    ip.add_argument("--method", default="strategist", choices=("strategist", "beam"))
    ip.add_argument("--cards", type=int, default=6)
    ip.add_argument("--games-per-pair", type=int, default=4)
    ip.add_argument("--simulations", type=int, default=16)
    ip.add_argument("--seed", type=int, default=0)


def make_agent(spec: str, simulations: int):
    from .gops_agents import GreedyAgent, MCTSAgent, RandomAgent

    if spec == "random":
        return RandomAgent(), None
    if spec == "greedy":
        return GreedyAgent(), None
    if spec == "mcts":
        return MCTSAgent(simulations=simulations), None
    path = Path(spec)
    if not path.is_file():
        raise InputError(f"Unknown agent {spec!r}: use {', '.join(AGENTS)} or a strategy file.")
    from .gops_heuristics import sandboxed_heuristic
    from .sandbox import SandboxedFunction

    fn = SandboxedFunction(path.read_text())
    return MCTSAgent(sandboxed_heuristic(fn), simulations=simulations, name=path.stem), fn


def _match(a_spec: str, b_spec: str, args, out) -> float:
    from .gops import GopsConfig, GopsState
    from .gops_agents import play_game

    (a, fa), (b, fb) = make_agent(a_spec, args.simulations), make_agent(b_spec, args.simulations)
    rng = np.random.default_rng(args.seed)
    config = GopsConfig(args.cards, args.tie_rule)
    score = 0.0
    try:
        for g in range(args.games):
            seats = (a, b) if g % 2 == 0 else (b, a)
            names = (a_spec, b_spec) if g % 2 == 0 else (b_spec, a_spec)
            end = play_game(seats, GopsState.new(config, seed=args.seed * 100_000 + g), rng)
            r = (end.returns()[g % 2] + 1) / 2
            score += r
            if out is not None:
                out.write(json.dumps({"p0": names[0], "p1": names[1], "scores": end.scores, "game": json.loads(end.to_json())}) + "\n")
    finally:
        for f in (fa, fb):
            if f is not None:
                f.close()
    return score / args.games


def run(args: argparse.Namespace) -> int:
    if args.games_command == "improve":
        from .llm import get_llm
        from .strategist import EvalSettings, StrategistRun

        args.run_dir.mkdir(parents=True, exist_ok=True)
        llm = get_llm(cache=args.run_dir / "llm_cache.jsonl")
        run_ = StrategistRun(args.run_dir, llm, EvalSettings(args.cards, "discard", args.games_per_pair, args.simulations),
                             method=args.method, seed=args.seed)
        for item in run_.run(args.iterations):
            if isinstance(item, dict):
                print(json.dumps(item))
        return 0
    out = open(args.out, "w", encoding="utf-8") if args.out else None
    try:
        if args.games_command == "selfplay":
            rate = _match(args.a, args.b, args, out)
            print(json.dumps({"a": args.a, "b": args.b, "games": args.games, "a_score": rate}))
        else:
            table = {a: [] for a in args.agents}
            for a, b in combinations(args.agents, 2):
                rate = _match(a, b, args, out)
                table[a].append(rate)
                table[b].append(1 - rate)
                print(json.dumps({"a": a, "b": b, "games": args.games, "a_score": rate}))
            print(json.dumps({"standings": {k: float(np.mean(v)) for k, v in sorted(table.items(), key=lambda kv: -np.mean(kv[1]))}}))
    finally:
        if out is not None:
            out.close()
    sys.stdout.flush()
    return 0
