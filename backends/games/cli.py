"""``iclr25-studio games``: batch runs of the Strategy Games capability.

    iclr25-studio games selfplay --a mcts --b greedy --games 100 --cards 13 --out games.jsonl
    iclr25-studio games tournament --agents random greedy mcts --games 20 --cards 6
    iclr25-studio games improve --run-dir runs/gops --iterations 5 [--method beam]   (needs an LLM endpoint)
    iclr25-studio games improve --game avalon --part heuristic|guide --run-dir runs/avalon --iterations 3
    (--games and --budget default to the game's own; the run's rules live in backends/games/improve.py)
    iclr25-studio replay runs/gops/run.json --out again/      # an improvement run's card, run again

``improve`` runs the same action as the Improve tab (``games_improve``): progress on stderr, each
iteration's log record as a JSON line on stdout, and the run card run.json beside the run's files.

Agents: random, greedy, mcts (baseline heuristic), or a path to a strategy source file (a sandboxed
``evaluate_state`` used at the leaves of MCTS). Every game is one JSON line. Games run serially, in
``--workers`` local processes, or as Ray tasks with ``--ray ADDRESS`` (``local`` starts Ray here).
"""

from __future__ import annotations

import argparse
import json
import sys
from itertools import combinations
from pathlib import Path

import numpy as np

from backends.common.errors import InputError
from backends.common.params import add_request_arguments, values_from_args
from backends.games import domains
from backends.games.requests import ImproveRequest, SelfPlayRequest

HELP = "GOPS self-play, tournaments and STRATEGIST improvement runs"
AGENTS = ("random", "greedy", "mcts")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="games_command", required=True)
    sp = sub.add_parser("selfplay", help="one agent against another, seats alternating")
    sp.add_argument("--a", default="mcts", help="an agent (random, greedy, mcts) or a strategy file")
    sp.add_argument("--b", default="random", help="an agent (random, greedy, mcts) or a strategy file")
    tp = sub.add_parser("tournament", help="round robin among agents")
    tp.add_argument("--agents", nargs="+", default=list(AGENTS), help="agents (random, greedy, mcts) or strategy files")
    for q in (sp, tp):
        add_request_arguments(q, SelfPlayRequest)
        q.add_argument("--out", type=Path, help="write every game as a JSON line here")
    ip = sub.add_parser("improve", help="run STRATEGIST iterations (resumes an existing run dir)")
    ip.add_argument("--run-dir", type=Path, required=True, help="the run's folder (a new run when it is empty)")
    ip.add_argument("--game", default=domains.DEFAULT_GAME, choices=domains.games(), help="the game to improve")
    ip.add_argument("--part", default=None, help="what the run improves, for games with several parts "
                    "(Avalon: heuristic, or guide of --guide-side); default: the game's first")
    add_request_arguments(ip, ImproveRequest, skip=("kind",))


def agent_spec(spec: str) -> tuple[str, str | None]:
    """(name, strategy source or None): a builtin agent, or a strategy file read here (tasks carry the source)."""
    from backends.games.gops.selfplay import BUILTIN_AGENTS

    if spec in BUILTIN_AGENTS:
        return spec, None
    path = Path(spec)
    if not path.is_file():
        raise InputError(f"Unknown agent {spec!r}: use {', '.join(BUILTIN_AGENTS)} or a strategy file.")
    return path.stem, path.read_text()


def _match(a_spec: str, b_spec: str, args, out) -> float:
    from backends.common.parallel import run_tasks
    from backends.games.gops.selfplay import match_tasks, play_task, score_of

    (a, a_src), (b, b_src) = agent_spec(a_spec), agent_spec(b_spec)
    tasks = match_tasks(a, a_src, b, b_src, args.games, args.num_cards, args.tie_rule, args.simulations, args.seed)
    results = run_tasks(play_task, tasks, ray_address=args.ray_address, workers=args.workers)
    if out is not None:
        for r in results:
            out.write(json.dumps(r) + "\n")
    return score_of(a, results)


def _improve(args: argparse.Namespace) -> int:
    """More iterations of the run in --run-dir (a new run there when it is empty), as the Improve tab runs them."""
    from backends.common.action_cli import run_action
    from backends.games.actions import IMPROVE
    from backends.games.improve import continues

    part = args.part or domains.domain_class(args.game).parts[0]
    request = ImproveRequest(kind=domains.kind_of(args.game, part), run_dir=args.run_dir,
                             **values_from_args(ImproveRequest, args))
    if args.run_dir.is_dir() and not continues(args.run_dir, request):
        raise InputError(f"{args.run_dir} holds a run of another kind; choose a new --run-dir.")
    result, _ = run_action(IMPROVE, request, args.run_dir)
    for record in result.records:
        print(json.dumps(record))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.games_command == "improve":
        return _improve(args)
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
