"""``iclr25-studio compress``: compress a causal LM with Basis Sharing (and the baselines), files out.

    iclr25-studio compress --ratio 20 --out runs/bs20                 # SmolLM2-135M, the default settings
    iclr25-studio compress --model my/llama-folder --ratio 40 --shared q,k,v,up,gate --out runs/x
    iclr25-studio compress --load runs/bs20 --prompt "What is a tuple?"   # chat with a saved model
    iclr25-studio compress --run runs/bs20/run.json --out again/       # replay a run card

The compressed model (config, tokenizer, compress.json, model.safetensors), results.json and the run
card go to --out; one JSON line with the table on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from backends.common.errors import InputError
from backends.common.params import add_request_arguments, values_from_args

from .requests import ChatRequest, CompressRequest

HELP = "Basis Sharing LLM compression vs SVD-LLM and SVD (files out), or chat with a saved compressed model"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, help="output folder (the compressed model and the run card)")
    p.add_argument("--run", type=Path, help="a run.json to reproduce (as `iclr25-studio replay`)")
    p.add_argument("--load", type=Path, help="a saved compressed model folder: answer --prompt with it")
    add_request_arguments(p, CompressRequest)
    add_request_arguments(p, ChatRequest)


def run(args: argparse.Namespace) -> int:
    from backends.common.action_cli import print_line, replay_card, run_action

    from .actions import COMPRESS

    if args.load is not None:
        return _chat(args)
    if args.run is not None:
        if args.out is None:
            raise InputError("Give --out for the replayed run's files.")
        result, paths = replay_card(args.run, args.out)
    else:
        if args.out is None:
            raise InputError("Give --out: the folder the compressed model is written to.")
        request = CompressRequest(**values_from_args(CompressRequest, args))
        result, paths = run_action(COMPRESS, request, args.out)
    print_line(**result.to_json(), out=args.out)
    return 0


def _chat(args: argparse.Namespace) -> int:
    from backends.common.action_cli import print_line

    from .chat import side_by_side
    from .store import load_compressed

    tok, model, plan, _ = load_compressed(args.load)
    if tok is None:
        raise InputError(f"{args.load} has no tokenizer files.")
    chat = ChatRequest(**values_from_args(ChatRequest, args))
    answer = ""
    for texts in side_by_side([model], tok, chat.prompt, chat.max_new_tokens):
        answer = texts[0]
    print_line(model=str(args.load), ratio=round(plan.ratio * 100), answer=answer)
    return 0
