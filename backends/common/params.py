"""A typed request's fields say everything about an input, once: type, range, choices, default, one-line help.

A request is a dataclass; a field that a person sets is declared with :func:`param`::

    @dataclass
    class CounterfactualRequest:
        num_inference_steps: int = param(100, minimum=2, maximum=1000, label="Network calls",
                                         help="Steps of the bridge: more is slower, finer.")

Everything else is derived from it: :func:`check_request` (the validation every action runs before its work,
one message format), the CLI's options (:func:`add_request_arguments`), the tab's controls (``app.components.params``),
the API's named and documented parameters and the MCP tools' schemas (:func:`json_schema`). Nothing restates a
limit: a test walks every action and fails where a tab's or the CLI's range or default differs from its request's.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import types
import typing
from dataclasses import MISSING, dataclass
from typing import Any

from .errors import InputError

_KEY = "param"


@dataclass(frozen=True)
class Param:
    """What one request field is to a person: its help line and the values it accepts."""

    help: str
    label: str = ""  # the control's label (default: the field's name in words)
    minimum: float | None = None
    maximum: float | None = None
    step: float | None = None  # a slider's step (ints: 1)
    choices: tuple | None = None  # the only values allowed
    cli: tuple[str, ...] = ()  # extra CLI spellings (``--steps`` beside ``--num-inference-steps``)


@dataclass(frozen=True)
class FieldSpec:
    """A request field with its resolved type, its default and its :class:`Param`."""

    name: str
    kind: type  # int, float, bool, str, or object (anything else: an image, a layout, a list)
    optional: bool  # ``None`` is allowed (it means "the model's default")
    default: Any  # ``MISSING`` when the field is required
    param: Param

    @property
    def label(self) -> str:
        return self.param.label or self.name.replace("_", " ").capitalize()

    @property
    def required(self) -> bool:
        return self.default is MISSING

    def describe(self) -> str:
        """The help line with the accepted values, as the CLI, the API and the MCP tools show it."""
        parts = [self.param.help.rstrip(".") + "."] if self.param.help else []
        accepts = self.accepts()
        if accepts:
            parts.append(accepts + ".")
        if not self.required and self.default is not None:
            parts.append(f"Default {self.default!r}.")
        elif self.optional:
            parts.append("Optional.")
        return " ".join(parts)

    def accepts(self) -> str:
        p = self.param
        if p.choices is not None:
            return "One of " + ", ".join(repr(c) for c in p.choices)
        what = {int: "A whole number", float: "A number"}.get(self.kind)
        if what is None:
            return ""
        if p.minimum is not None and p.maximum is not None:
            return f"{what} from {_num(p.minimum)} to {_num(p.maximum)}"
        if p.minimum is not None:
            return f"{what} of at least {_num(p.minimum)}"
        if p.maximum is not None:
            return f"{what} of at most {_num(p.maximum)}"
        return what


def param(default: Any = MISSING, *, help: str, label: str = "", minimum: float | None = None,
          maximum: float | None = None, step: float | None = None, choices: typing.Iterable | None = None,
          cli: typing.Iterable[str] = (), default_factory: typing.Callable[[], Any] | Any = MISSING) -> Any:
    """A dataclass field that carries its :class:`Param` (see the module's docstring)."""
    spec = Param(help=help, label=label, minimum=minimum, maximum=maximum, step=step,
                 choices=tuple(choices) if choices is not None else None, cli=tuple(cli))
    if default_factory is not MISSING:
        return dataclasses.field(default_factory=default_factory, metadata={_KEY: spec})
    return dataclasses.field(default=default, metadata={_KEY: spec})


def seed_param(help: str = "Same seed and settings → the same result.") -> Any:
    """The seed field every generating request has: a whole number a generator accepts."""
    from .seeding import MAX_SEED

    return param(0, minimum=0, maximum=MAX_SEED, label="Seed", help=help)


def fields_of(request_type: type) -> dict[str, FieldSpec]:
    """The request's fields declared with :func:`param`, by name, in declaration order."""
    cached = _CACHE.get(request_type)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(request_type)
    found: dict[str, FieldSpec] = {}
    for f in dataclasses.fields(request_type):
        spec = f.metadata.get(_KEY)
        if spec is None:
            continue
        kind, optional = _kind(hints.get(f.name, object))
        default = f.default if f.default is not MISSING else (
            f.default_factory() if f.default_factory is not MISSING else MISSING)
        found[f.name] = FieldSpec(f.name, kind, optional, default, spec)
    _CACHE[request_type] = found
    return found


_CACHE: dict[type, dict[str, FieldSpec]] = {}


def field_spec(request_type: type, name: str) -> FieldSpec:
    try:
        return fields_of(request_type)[name]
    except KeyError:
        raise KeyError(f"{request_type.__name__} has no param field {name!r}") from None


def check_value(spec: FieldSpec, value: Any) -> Any:
    """``value`` as the field's type (``7.0`` → ``7`` for an int field), or an ``InputError`` that names the
    field, what it accepts and what was given."""
    if value is None:
        if spec.optional:
            return None
        raise InputError(f"{spec.label} is missing. {spec.accepts() or 'Give a value'}.")
    p = spec.param
    if spec.kind is bool:
        if not isinstance(value, bool | int) or value not in (0, 1):
            raise InputError(f"{spec.label} must be true or false, got {value!r}.")
        value = bool(value)
    elif spec.kind is int:
        if isinstance(value, bool) or not isinstance(value, int | float) or not float(value).is_integer():
            raise InputError(f"{spec.label} must be {spec.accepts().lower()}, got {value!r}.")
        value = int(value)
    elif spec.kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
            raise InputError(f"{spec.label} must be {spec.accepts().lower()}, got {value!r}.")
        value = float(value)
    elif spec.kind is str and not isinstance(value, str):
        raise InputError(f"{spec.label} must be text, got {type(value).__name__}.")
    if p.choices is not None and value not in p.choices:
        raise InputError(f"{spec.label} must be one of {', '.join(map(repr, p.choices))}; got {value!r}.")
    if spec.kind in (int, float) and ((p.minimum is not None and value < p.minimum)
                                      or (p.maximum is not None and value > p.maximum)):
        raise InputError(f"{spec.label} must be {spec.accepts().lower()}, got {value!r}.")
    return value


def check_request(request: Any) -> None:
    """Every :func:`param` field of ``request`` checked (and coerced in place) against its declaration."""
    for name, spec in fields_of(type(request)).items():
        value = check_value(spec, getattr(request, name))
        if value is not getattr(request, name):
            object.__setattr__(request, name, value)  # frozen dataclasses too


# ---- the CLI ---------------------------------------------------------------------------------------------

def option_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_request_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, request_type: type,
                  only: typing.Iterable[str] | None = None, skip: typing.Iterable[str] = ()) -> None:
    """One option per :func:`param` field of scalar type (``--num-inference-steps`` and the field's ``cli``
    spellings), its default, choices and help from the request; ``dest`` is the field's name."""
    names = list(only) if only is not None else list(fields_of(request_type))
    for name in names:
        if name in set(skip):
            continue
        spec = field_spec(request_type, name)
        if spec.kind is object:
            continue
        flags = [option_name(name), *spec.param.cli]
        kwargs: dict[str, Any] = {"dest": name, "help": spec.describe()}
        if spec.kind is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
            kwargs["default"] = spec.default if spec.default is not MISSING else None
        else:
            kwargs["type"] = cli_type(spec)
            if spec.param.choices is not None:
                kwargs["choices"] = spec.param.choices
            if spec.required:
                kwargs["required"] = True
            else:
                kwargs["default"] = spec.default
        action = parser.add_argument(*flags, **kwargs)
        action.request_field = spec  # the single-source test reads them back
        action.request_type = request_type


def values_from_args(request_type: type, args: argparse.Namespace) -> dict[str, Any]:
    """The request's scalar fields that ``args`` holds (as :func:`add_request_arguments` named them)."""
    return {name: getattr(args, name) for name, spec in fields_of(request_type).items()
            if spec.kind is not object and hasattr(args, name)}


def cli_type(spec: FieldSpec):
    """An argparse ``type=`` that reads a value of the field and checks it as the request does."""
    base = spec.kind if spec.kind in (int, float, str) else str

    def convert(text: str):
        if spec.optional and text.strip().lower() in ("", "none", "default"):
            return None
        try:
            value = base(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{spec.accepts() or 'a value'} expected, got {text!r}") from None
        try:
            return check_value(spec, value)
        except InputError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    convert.__name__ = spec.kind.__name__
    convert.request_field = spec
    return convert


# ---- the API and MCP -------------------------------------------------------------------------------------

def json_schema(spec: FieldSpec) -> dict:
    """The field as a JSON-schema property (MCP tools, the API's docs)."""
    kind = {int: "integer", float: "number", bool: "boolean", str: "string"}.get(spec.kind)
    out: dict[str, Any] = {"description": spec.describe()}
    if kind is not None:
        out["type"] = [kind, "null"] if spec.optional else kind
    if spec.param.choices is not None:
        out["enum"] = list(spec.param.choices)
    if spec.param.minimum is not None:
        out["minimum"] = spec.param.minimum
    if spec.param.maximum is not None:
        out["maximum"] = spec.param.maximum
    if not spec.required and _is_json(spec.default):
        out["default"] = spec.default
    return out


def _is_json(value) -> bool:
    return value is None or isinstance(value, bool | int | float | str)


def _kind(hint) -> tuple[type, bool]:
    """(base type, None allowed) of a type hint: ``int | None`` → (int, True); a Literal → its values' type."""
    optional = False
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        optional = type(None) in args
        rest = [a for a in args if a is not type(None)]
        hint = rest[0] if len(rest) == 1 else object
    if typing.get_origin(hint) is typing.Literal:
        hint = type(typing.get_args(hint)[0])
    return (hint if hint in (int, float, bool, str) else object), optional


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
