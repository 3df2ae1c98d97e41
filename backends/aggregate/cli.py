"""``iclr25-studio aggregate``: aggregate a problem's models (MEVA, MEEA and the baselines), files out.

    iclr25-studio aggregate --problem laplace --n 10 --out results/
    iclr25-studio aggregate --problem diabetes --models "linear,random forest,k-NN" --out results/
    iclr25-studio aggregate --sweep --problem pathological --largest 80 --out sweep/
    iclr25-studio aggregate --run downloads/run.json --out again/      # reproduce a run card

Writes the plots, predictions.npz, weights.npz, metrics.json and the run card run.json into --out; one JSON line
(the test errors) on stdout.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from backends.common.params import add_request_arguments, values_from_args

from .requests import AggregateRequest, SweepRequest

HELP = "MEVA vs MEEA and the usual ensembles on a problem's models (files out)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--run", type=Path, help="a run.json to reproduce (as `iclr25-studio replay`)")
    p.add_argument("--models", default=None,
                   help="comma-separated model names of the problem (default: all of them)")
    p.add_argument("--sweep", action="store_true",
                   help="sweep the training-set size instead (test error of MEVA and MEEA as it doubles)")
    add_request_arguments(p, AggregateRequest, skip=("models",))
    add_request_arguments(p, SweepRequest, only=("largest", "seeds"))


def run(args: argparse.Namespace) -> int:
    from backends.common.action_cli import print_line, replay_card, run_action

    from .actions import AGGREGATE, SWEEP

    if args.run is not None:
        result, _ = replay_card(args.run, args.out)
    elif args.sweep:
        values = {k: v for k, v in values_from_args(SweepRequest, args).items()}
        result, _ = run_action(SWEEP, SweepRequest(**values, models=args.models), args.out)
    else:
        values = values_from_args(AggregateRequest, args)
        values.pop("models", None)
        result, _ = run_action(AGGREGATE, AggregateRequest(**values, models=args.models), args.out)
    print_line(out=args.out, **result.to_json())
    return 0
