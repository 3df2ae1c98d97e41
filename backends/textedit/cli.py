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
import functools
from pathlib import Path

from backends.common.errors import InputError
from backends.common.params import add_request_arguments, field_spec, fields_of, option_name

from .requests import EditRequest, FinetuneRequest, GenerateRequest, LocalizeRequest, ProtectRequest

HELP = "Text in Image: generate, localize text layers, edit, protect, LoRA fine-tune (files out)"
COMMANDS = {  # verb: (its request, its help)
    "generate": (GenerateRequest, "an image of a word"),
    "localize": (LocalizeRequest, "which layers write the text (per-layer and per-head scan)"),
    "edit": (EditRequest, "rewrite the text of an image by patching the localized layers"),
    "protect": (ProtectRequest, "generate with toxic-text prevention"),
    "finetune": (FinetuneRequest, "LoRA on the localized / all / random layers; writes adapter.safetensors"),
}
ACTIONS = tuple(COMMANDS)
TEXTS = ("text", "new_text")  # required by the request, but a run card (--card) may give them instead
GIVEN = "textedit_given"  # the request fields given on the command line (only they override a card's values)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """One subcommand per action; its options are its request's fields (``backends.common.params``)."""
    sub = p.add_subparsers(dest="textedit_action", required=True)
    for verb, (request_type, help_text) in COMMANDS.items():
        c = sub.add_parser(verb, help=help_text)
        c.add_argument("--out", type=Path, required=True, help="output folder")
        c.add_argument("--card", type=Path, help="a run card (run.json) to reproduce; other options override it")
        add_request_arguments(c, request_type, skip=TEXTS)
        declared = fields_of(request_type)
        for name in TEXTS:
            if name in declared:
                c.add_argument(option_name(name), dest=name, help=declared[name].describe())
        # fields that are lists or boxes, typed as one comma-separated option
        for name, example in (("layers", "3,4"), ("block_list", "idiot,jerk"), ("region", "x0,y0,x1,y1")):
            if name in declared:
                c.add_argument(option_name(name), dest=name,
                               help=f"{field_spec(request_type, name).describe()} Comma-separated: {example}.")
        _record_given(c)


def _record_given(parser: argparse.ArgumentParser) -> None:
    """Each option of ``parser`` adds its field to ``args.textedit_given`` when it is on the command line: the
    defaults are the request's own, so only the options given may override a run card's values."""
    for action in parser._actions:
        if action.option_strings and not isinstance(action, argparse._HelpAction):
            action.__class__ = _recording(type(action))


@functools.cache
def _recording(base: type) -> type:
    def __call__(self, parser, namespace, values, option_string=None):
        base.__call__(self, parser, namespace, values, option_string)
        setattr(namespace, GIVEN, {*getattr(namespace, GIVEN, ()), self.dest})

    return type(f"Recording{base.__name__}", (base,), {"__call__": __call__})


def _list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _options(args: argparse.Namespace, cls: type) -> dict:
    """The request fields given on the command line."""
    names = {f.name for f in dataclasses.fields(cls)} & set(getattr(args, GIVEN, ()))
    values = {}
    for key in sorted(names):
        value = getattr(args, key)
        if key == "layers" and value is not None:
            value = _list(value)
        elif key == "region" and value is not None:
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
        for name in TEXTS:
            if name in fields_of(action.request_type) and not values.get(name):
                raise InputError(f"Give the {'text to write' if name == 'text' else 'new text'}: "
                                 f"{option_name(name)} WORD (or a run card).")
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
