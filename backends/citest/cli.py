"""``iclr25-studio citest``: DCT beside Fisher-z and chi-square, on a simulated graph or a CSV, files out.

    iclr25-studio citest test --graph chain --nodes 3 --n 1000 --discretized all --x X1 --y X3 --given X2 --out run/
    iclr25-studio citest discover --graph random --nodes 8 --n 2000 --levels 2 --out run/
    iclr25-studio citest test --csv mine.csv --discretized "income, rating" --x income --y health --given age --out run/
    iclr25-studio citest --run run/run.json --out again/       # replay a run card (as `iclr25-studio replay`)

Each run writes its files (p-values CSV, graphs JSON/GraphML, data.csv, run.json) into --out and prints one
JSON line: the p-values and the truth (test), or SHD and edge F1 per test (discover).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from backends.common.errors import InputError
from backends.common.params import add_request_arguments, values_from_args

from .requests import DiscoverRequest, TestRequest

HELP = "DCT vs Fisher-z vs chi-square: test one CI statement or discover a graph with PC (files out)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", type=Path, help="a run.json to reproduce (as `iclr25-studio replay`)")
    p.add_argument("--out", type=Path, help="output folder")
    sub = p.add_subparsers(dest="verb")
    for verb, request_type, text in (("test", TestRequest, "test one CI statement with the three tests"),
                                     ("discover", DiscoverRequest, "PC with each test; SHD and edge F1")):
        q = sub.add_parser(verb, help=text, description=text)
        q.add_argument("--out", type=Path, required=True, help="output folder")
        q.add_argument("--csv", type=Path, default=None,
                       help="a CSV of your own instead of the simulated graph (header row, numbers only)")
        add_request_arguments(q, request_type, skip=("csv",))


def run(args: argparse.Namespace) -> int:
    from backends.common.action_cli import print_line, replay_card, run_action

    from .actions import DISCOVER, TEST

    if args.run is not None:
        if args.out is None:
            raise InputError("Give --out, the folder for the replayed run's files.")
        result, _ = replay_card(args.run, args.out)
        print_line(out=args.out, **_line(result))
        return 0
    if args.verb is None:
        raise InputError("Say what to do: `citest test …` or `citest discover …` (or --run run.json --out DIR).")
    action, request_type = (TEST, TestRequest) if args.verb == "test" else (DISCOVER, DiscoverRequest)
    request = request_type(csv=args.csv, **values_from_args(request_type, args))
    result, _ = run_action(action, request, args.out)
    print_line(out=args.out, **_line(result))
    return 0


def _line(result) -> dict:
    if hasattr(result, "p_values"):
        return {"statement": result.statement, "p_values": result.p_values, "truth": result.truth}
    return {"scores": result.scores()}
