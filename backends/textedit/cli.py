"""``iclr25-studio textedit``: the Text in Image actions from the command line (files out).

    iclr25-studio textedit generate --text cat --out out/
    iclr25-studio textedit localize --text cat --new-text dog --out out/      # layers.csv, layer_NN.png
    iclr25-studio textedit edit --text cat --new-text dog --layers 3,4 --out out/
    iclr25-studio textedit protect --text idiot --block-list idiot,jerk --out out/
    iclr25-studio textedit finetune --target localized --train-steps 60 --out out/   # adapter.safetensors
    iclr25-studio textedit edit --card out/run.json --out again/                    # reproduce a run card

Each runs the tab's action (``actions.py``), writes PNGs, result.json and the run card run.json to
--out (see ``outputs.py``) and prints result.json's numbers as one JSON line. ``--card`` replays a
run card as ``iclr25-studio replay`` does; options given with it override the card's values.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from backends.common.errors import InputError

from .models import DEFAULT_MODEL, MODEL_CHOICES

HELP = "Text in Image: generate, localize text layers, edit, protect, LoRA fine-tune (files out)"
ACTIONS = ("generate", "localize", "edit", "protect", "finetune")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--card", type=Path, help="a run card (run.json) to reproduce; other options override it")
    p.add_argument("--model", choices=MODEL_CHOICES, help=f"model (default {DEFAULT_MODEL})")
    p.add_argument("--template", help='prompt template (default "a sign that says")')
    p.add_argument("--seed", type=int)
    p.add_argument("--steps", type=int, dest="num_inference_steps", help="sampling steps (default: the model's)")
    p.add_argument("--guidance", type=float, dest="guidance_scale", help="CFG scale (default: the model's)")


def _list(text: str | None) -> list[str] | None:
    return None if text is None else [x.strip() for x in text.split(",") if x.strip()]


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="textedit_action", required=True)
    g = sub.add_parser("generate", help="an image of a word")
    _common(g)
    g.add_argument("--text")
    loc = sub.add_parser("localize", help="which layers write the text (per-layer and per-head scan)")
    _common(loc)
    loc.add_argument("--text", help="text A (unpatched)")
    loc.add_argument("--new-text", dest="new_text", help="text B (patched in)")
    loc.add_argument("--extra-pairs", dest="extra_pairs", type=int, help="more held-out word pairs to average over")
    loc.add_argument("--start-step", dest="start_step", type=int)
    loc.add_argument("--no-heads", dest="per_head", action="store_const", const=False, help="skip the per-head scan")
    loc.add_argument("--top-k", dest="top_k", type=int, help="choose the k best layers instead of the rule")
    e = sub.add_parser("edit", help="rewrite the text of an image by patching the localized layers")
    _common(e)
    e.add_argument("--text", help="the original text")
    e.add_argument("--new-text", dest="new_text", help="the new text")
    e.add_argument("--layers", help="comma-separated layer names or indices (default: the model's)")
    e.add_argument("--start-step", dest="start_step", type=int)
    e.add_argument("--region", help="x0,y0,x1,y1: keep the original outside this box")
    pr = sub.add_parser("protect", help="generate with toxic-text prevention")
    _common(pr)
    pr.add_argument("--text")
    pr.add_argument("--block-list", dest="block_list", help="comma-separated blocked words")
    pr.add_argument("--benign", dest="benign_text", help="the benign word whose K/V replace a blocked word's")
    pr.add_argument("--layers")
    pr.add_argument("--start-step", dest="start_step", type=int)
    ft = sub.add_parser("finetune", help="LoRA on the localized / all / random layers; writes adapter.safetensors")
    _common(ft)
    ft.add_argument("--target", choices=("localized", "all", "random"))
    ft.add_argument("--layers")
    ft.add_argument("--train-steps", dest="train_steps", type=int)
    ft.add_argument("--rank", type=int)
    ft.add_argument("--lr", dest="learning_rate", type=float)
    ft.add_argument("--batch-size", dest="batch_size", type=int)
    ft.add_argument("--eval-words", dest="eval_words", type=int)


def _options(args: argparse.Namespace, cls: type) -> dict:
    """The request fields given on the command line."""
    names = {f.name for f in dataclasses.fields(cls)}
    values = {}
    for key, value in vars(args).items():
        if key in names and value is not None:
            if key in ("layers", "block_list"):
                value = _list(value)
            elif key == "region":
                try:
                    value = tuple(int(v) for v in value.split(","))
                except ValueError:
                    raise InputError("--region takes four whole numbers: x0,y0,x1,y1.") from None
            values[key] = value
    return values


def request_from(args: argparse.Namespace):
    """The action's request: the card's (if any), then every option given on the command line."""
    from backends.common.runcard import read_card

    from .actions import BY_VERB

    action = BY_VERB[args.textedit_action]
    values = _options(args, action.request_type)
    if args.card is None:
        if "text" in {f.name for f in dataclasses.fields(action.request_type)} and not values.get("text"):
            raise InputError("Give the text to write: --text WORD (or a run card).")
        return action.request_type.from_dict(values)
    card = read_card(args.card)
    if card["action"] != action.name:
        raise InputError(f"The run card is of a {card['action'].removeprefix('textedit_')!r} run, "
                         f"not {args.textedit_action!r}.")
    return dataclasses.replace(action.request_from_card(card, args.card.parent, args.out), **values)


def run(args: argparse.Namespace) -> int:
    from backends.common.action_cli import print_line, replay_card, run_action

    from .actions import BY_VERB
    from .outputs import summary

    action = BY_VERB[args.textedit_action]
    request = request_from(args)
    if args.card is not None and not _options(args, action.request_type):
        result, paths = replay_card(args.card, args.out)  # the card as it is: `iclr25-studio replay`
    else:
        result, paths = run_action(action, request, args.out)
    info = summary(result)
    if args.textedit_action == "localize":
        info = {k: info[k] for k in ("chosen", "chosen_share", "chosen_module_share", "denoiser_params", "pairs",
                                     "model", "seconds")}
    print_line(**info, files=sorted(str(p) for p in paths.values()))
    return 0
