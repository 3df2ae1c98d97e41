"""``iclr25-studio textedit``: the Text in Image actions from the command line (files out).

    iclr25-studio textedit generate --text cat --out out/
    iclr25-studio textedit localize --text cat --new-text dog --out out/      # layers.csv, layer_NN.png
    iclr25-studio textedit edit --text cat --new-text dog --layers 3,4 --out out/
    iclr25-studio textedit protect --text idiot --block-list idiot,jerk --out out/
    iclr25-studio textedit finetune --target localized --train-steps 60 --out out/   # adapter.safetensors
    iclr25-studio textedit edit --card out/card.json --out again/                   # reproduce a run card

Each writes PNGs, result.json and card.json to --out (see ``outputs.py``) and prints result.json's
numbers as one JSON line. Options given with --card override the card's values.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from backends.common import jsontext
from backends.common.errors import InputError

from .models import DEFAULT_MODEL, MODEL_CHOICES

ACTIONS = ("generate", "localize", "edit", "protect", "finetune")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--card", type=Path, help="a run card (card.json) to reproduce; other options override it")
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


def request_from(args: argparse.Namespace):
    """The action's request: the card's values (if any), then every option given on the command line."""
    from .edit import EditRequest
    from .localize import LocalizeRequest
    from .lora import FinetuneRequest
    from .protect import ProtectRequest
    from .service import GenerateRequest

    cls = {"generate": GenerateRequest, "localize": LocalizeRequest, "edit": EditRequest, "protect": ProtectRequest,
           "finetune": FinetuneRequest}[args.textedit_action]
    values: dict = {}
    if args.card is not None:
        try:
            card = jsontext.loads(args.card.read_text())
        except (OSError, ValueError) as e:
            raise InputError(f"Cannot read the run card {args.card}: {e}.") from None
        if not isinstance(card, dict) or not isinstance(card.get("request", {}), dict):
            raise InputError(f"{args.card} is not a run card (a JSON object with 'action' and 'request').")
        if card.get("action") != args.textedit_action:
            raise InputError(f"The run card is of a {card.get('action')!r} run, not {args.textedit_action!r}.")
        values.update(card.get("request", {}))
    names = set(cls.__dataclass_fields__)
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
    if "text" in names and not values.get("text"):
        raise InputError("Give the text to write: --text WORD (or a run card).")
    return cls.from_dict(values)


def run(args: argparse.Namespace) -> int:
    from backends.common.progress import run_to_result

    from .edit import edit
    from .localize import localize
    from .lora import finetune
    from .outputs import summary, write
    from .protect import protect
    from .service import generate

    action = {"generate": generate, "localize": localize, "edit": edit, "protect": protect,
              "finetune": finetune}[args.textedit_action]
    result = run_to_result(action(request_from(args)))
    paths = write(result, args.out)
    info = summary(result)
    if args.textedit_action == "localize":
        info = {k: info[k] for k in ("chosen", "chosen_share", "chosen_module_share", "denoiser_params", "pairs",
                                     "model", "seconds")}
    print(json.dumps({**info, "files": sorted(str(p) for p in paths.values())}, default=str))
    return 0
