"""``iclr25-studio unlearn``: Score Forgetting Distillation from the command line (files out).

    iclr25-studio unlearn distil --forget cube --safe sphere --iterations 300 --out run/     # run/sfd-cube-to-sphere/
    iclr25-studio unlearn distil --method salun --forget cube --safe sphere --out run2/        # the SalUn baseline
    iclr25-studio unlearn distil --out run/ --resume                                           # continue a stopped run
    iclr25-studio unlearn sample --forget cube --safe sphere --out grids/                      # shipped generators
    iclr25-studio unlearn evaluate --sfd-generator run/ --per-class 50 --out eval/             # metrics.json
    iclr25-studio unlearn distil --teacher text --forget red --safe blue --iterations 50 --out t/  # forget a word
    iclr25-studio unlearn sample --teacher text --forget red --safe blue --sfd-generator t/ --prompts "a red cube; a blue sphere" --out g/

Each runs the tab's action (``actions.py``): distil writes the checkpoint (state.pt), the trained network
(safetensors + config.json, loadable with --sfd-generator / --esd-model / --salun-model), losses.json and preview.png; sample and
evaluate write one side-by-side panel per class, a grid per method, samples.npz and metrics.json; all write the run
card run.json (``iclr25-studio replay``). One JSON line on stdout.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from backends.common.params import add_request_arguments, values_from_args

from .requests import DistilRequest, EvaluateRequest

HELP = ("Unlearning (SFD): distil a model that forgets a shape (or, on the 3D Layout text teacher, a word), sample and "
        "evaluate it beside ESD, SalUn and negative guidance")
COMMANDS = {"distil": (DistilRequest, "train SFD's one-step generator (or the ESD / SalUn baseline) that forgets a class"),
            "sample": (EvaluateRequest, "the side-by-side grids of every method with the classifier's readings"),
            "evaluate": (EvaluateRequest, "forget rate, other-class accuracy, Fréchet distance, seconds per image")}


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="unlearn_action", required=True)
    for verb, (request_type, help_text) in COMMANDS.items():
        c = sub.add_parser(verb, help=help_text)
        c.add_argument("--out", type=Path, required=True, help="output folder")
        add_request_arguments(c, request_type, skip=("out_dir", "metrics"))


def run(args: argparse.Namespace) -> int:
    from backends.common.action_cli import print_line, run_action

    from .actions import DISTIL, EVALUATE, SAMPLE

    verb = args.unlearn_action
    action = {"distil": DISTIL, "sample": SAMPLE, "evaluate": EVALUATE}[verb]
    request_type = COMMANDS[verb][0]
    values = values_from_args(request_type, args)
    request = request_type(out_dir=args.out, **values)
    result, paths = run_action(action, request, args.out)
    print_line(action=verb, out=args.out, **result.to_json())
    return 0
