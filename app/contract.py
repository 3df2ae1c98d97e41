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

    checks = []
    events = _bound_events(demo)
    options = _cli_options(parser)
    for action in actions():
        declared = fields_of(action.request_type)
        check = ActionCheck(action.name, declared=len(declared))
        for fn in events.get(action.name, []):
            check.bound += 1
            for name, component in zip(fn.input_parameter_names or [], fn.inputs, strict=False):
                if name in declared:
                    check.checked_tab.append(name)
                    check.problems += [f"tab {name}: {p}" for p in disagreement(declared[name], component)]
        for name, option in options.get(action.capability, {}).items():
            if name in declared:
                check.checked_cli.append(name)
                check.problems += [f"cli --{name}: {p}" for p in _cli_disagreement(declared[name], option)]
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


def _cli_options(parser: argparse.ArgumentParser) -> dict[str, dict[str, argparse.Action]]:
    """Capability → its subcommand's options by ``dest``."""
    from backends import CAPABILITIES

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: {a.dest: a for a in sub.choices[name]._actions if a.option_strings}
            for name in CAPABILITIES if name in sub.choices}


def _cli_disagreement(spec, option: argparse.Action) -> list[str]:
    found = []
    if spec.default is not MISSING and option.default != spec.default:
        found.append(f"default {option.default!r} ≠ {spec.default!r}")
    if spec.param.choices is not None and option.choices is not None \
            and list(option.choices) != list(spec.param.choices):
        found.append(f"choices {list(option.choices)} ≠ {list(spec.param.choices)}")
    if getattr(option, "request_field", None) is None and (spec.param.minimum is not None
                                                          or spec.param.maximum is not None):
        found.append("the option does not check the request's range (make it with add_request_arguments)")
    return found
