"""The suite's API contract, checked: every endpoint names its parameters, and every action's tab, CLI and request
agree (``backends.common.params`` is the one source; this says where something drifted from it).

The tests (``tests/app/test_api_contract.py``) and ``bench/platform.py`` both call these, so the numbers the bench
writes are the ones the tests hold to.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field

import gradio as gr

from backends.common.params import MISSING, fields_of

UNNAMED = re.compile(r"^(value|param|parameter)_\d+$")


def unnamed_parameters(api_info: dict) -> list[str]:
    """``endpoint: parameter`` for every parameter of a named endpoint that has no real name."""
    return [f"{endpoint}: {p.get('parameter_name')}"
            for endpoint, info in api_info.get("named_endpoints", {}).items()
            for p in info.get("parameters", [])
            if not p.get("parameter_name") or UNNAMED.match(str(p["parameter_name"]))]


def undocumented_parameters(api_info: dict) -> list[str]:
    """``endpoint: parameter`` for every named endpoint's parameter with no description."""
    return [f"{endpoint}: {p.get('parameter_name')}"
            for endpoint, info in api_info.get("named_endpoints", {}).items()
            for p in info.get("parameters", []) if not (p.get("description") or "").strip()]


@dataclass
class ActionCheck:
    """Where one action's tab and CLI show its request's fields, and where they disagree with it."""

    action: str
    declared: int = 0  # the request's fields declared with backends.common.params.param
    bound: int = 0  # events of the app that run it
    checked_tab: list[str] = field(default_factory=list)  # request fields a tab control shows
    checked_cli: list[str] = field(default_factory=list)  # request fields a CLI option sets
    problems: list[str] = field(default_factory=list)

    @property
    def single_source(self) -> bool:
        return self.declared > 0 and self.bound > 0 and not self.problems


def check_actions(demo: gr.Blocks, parser: argparse.ArgumentParser) -> list[ActionCheck]:
    """One :class:`ActionCheck` per action of ``backends.actions()``."""
    from backends import actions

    from .components.params import disagreement

    events = _bound_events(demo)
    cli = _cli_checks(parser)
    checks = []
    for action in actions():
        declared = fields_of(action.request_type)
        check = ActionCheck(action.name, declared=len(declared))
        for fn in events.get(action.name, []):
            check.bound += 1
            for name, component in zip(fn.input_parameter_names or [], fn.inputs, strict=False):
                if name in declared:
                    check.checked_tab.append(name)
                    check.problems += [f"tab {name}: {p}" for p in disagreement(declared[name], component)]
        for name, problems in cli.get(action.request_type, {}).items():
            check.checked_cli.append(name)
            check.problems += [f"cli --{name}: {p}" for p in problems]
        checks.append(check)
    return checks


def _bound_events(demo: gr.Blocks) -> dict[str, list]:
    """Action name → the app's events that run it (``bind_action`` marks its handler with ``action_name``)."""
    found: dict[str, list] = {}
    for fn in demo.fns.values():
        name = getattr(fn.fn, "action_name", None)
        if name:
            found.setdefault(name, []).append(fn)
    return found


def _cli_checks(parser: argparse.ArgumentParser) -> dict[type, dict[str, list[str]]]:
    """Request type → field → where its CLI option disagrees with it (empty: it agrees), over every (sub)command.

    In each command, an option made from a request (``add_request_arguments``) is checked against its field, and
    so is a hand-made option of that command whose ``dest`` is a field of a request the command's other options
    come from (a limit written by hand beside the derived ones)."""
    found: dict[type, dict[str, list[str]]] = {}

    def visit(p: argparse.ArgumentParser) -> None:
        options = [a for a in p._actions if a.option_strings]
        made = {a.request_type for a in options if getattr(a, "request_type", None) is not None}
        for option in options:
            types = [option.request_type] if getattr(option, "request_type", None) is not None else made
            for request_type in types:
                spec = fields_of(request_type).get(option.dest)
                if spec is not None and spec.kind is not object:
                    found.setdefault(request_type, {}).setdefault(option.dest, []).extend(
                        _cli_disagreement(spec, option))
        for sub in (a for a in p._actions if isinstance(a, argparse._SubParsersAction)):
            for child in sub.choices.values():
                visit(child)

    visit(parser)
    return found


def _cli_disagreement(spec, option: argparse.Action) -> list[str]:
    found = []
    # None: not given (the request's default applies, or another option gives the input instead)
    if spec.default is not MISSING and option.default is not None and option.default != spec.default:
        found.append(f"default {option.default!r} ≠ {spec.default!r}")
    if spec.param.choices is not None and option.choices is not None \
            and list(option.choices) != list(spec.param.choices):
        found.append(f"choices {list(option.choices)} ≠ {list(spec.param.choices)}")
    checked = getattr(option, "request_field", None) or getattr(option.type, "request_field", None)
    if checked is None and (spec.param.minimum is not None or spec.param.maximum is not None):
        found.append("the option does not check the request's range (make it with add_request_arguments)")
    return found
