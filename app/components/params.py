"""A tab's controls made from its request's fields (``backends.common.params``): range, default, choices, label
and the one-line help as ``info=`` come from the request, so the tab cannot disagree with the API or the CLI.

    ui.steps = control(CounterfactualRequest, "num_inference_steps", elem_id="cf-steps")

Keyword arguments are for layout only (``elem_id``, ``scale``, ``visible``, ``label`` …); a range, a default or
choices given here are refused: change the request instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr

from backends.common.params import FieldSpec, field_spec, fields_of

_OWNED = {"minimum", "maximum", "value", "choices", "step", "info", "precision"}


def control(request_type: type, name: str, *, widget: str | None = None, **layout: Any) -> gr.components.Component:
    """The Gradio component for one request field: a slider for a bounded number, a number box for an unbounded
    one, a checkbox, a dropdown (or ``widget="radio"``) for choices, a textbox for text."""
    owned = _OWNED & set(layout)
    if owned:
        raise TypeError(f"{', '.join(sorted(owned))} of {request_type.__name__}.{name} come from the request")
    spec = field_spec(request_type, name)
    p = spec.param
    common = {"label": spec.label, "info": p.help, **layout}
    value = None if spec.required else spec.default
    if p.choices is not None:
        cls = gr.Radio if widget == "radio" else gr.Dropdown
        return cls(list(p.choices), value=value, **common)
    if spec.kind is bool:
        return gr.Checkbox(value=bool(value), **common)
    if spec.kind in (int, float):
        bounded = p.minimum is not None and p.maximum is not None
        if bounded and widget != "number":
            step = p.step if p.step is not None else (1 if spec.kind is int else (p.maximum - p.minimum) / 100)
            return gr.Slider(p.minimum, p.maximum, value=value, step=step, **common)
        return gr.Number(value=value, minimum=p.minimum, maximum=p.maximum,
                         precision=0 if spec.kind is int else None, **common)
    if spec.kind is str:
        return gr.Textbox(value=value, **common)
    raise TypeError(f"{request_type.__name__}.{name} is not a scalar field; build its component in the tab")


def disagreement(spec: FieldSpec, component: gr.components.Component) -> list[str]:
    """Where a component shows a field otherwise than its request declares it (empty: they agree)."""
    p, found = spec.param, []
    if isinstance(component, gr.Slider | gr.Number):
        for what, declared in (("minimum", p.minimum), ("maximum", p.maximum)):
            shown = getattr(component, what, None)
            if declared is not None and (shown is None or float(shown) != float(declared)):
                found.append(f"{what} {shown} ≠ {declared}")
    if isinstance(component, gr.Dropdown | gr.Radio) and p.choices is not None:
        shown = [c[1] if isinstance(c, tuple | list) else c for c in component.choices]
        if list(shown) != list(p.choices):
            found.append(f"choices {shown} ≠ {list(p.choices)}")
    if not spec.required and spec.default is not None and not callable(component.value):
        shown = component.value
        if isinstance(component, gr.Slider | gr.Number) and shown is not None:
            shown = float(shown)
            ok = shown == float(spec.default)
        else:
            ok = shown == spec.default
        if not ok:
            found.append(f"default {component.value!r} ≠ {spec.default!r}")
    return found


def api_docstring(description: str, names: Sequence[str], request_type: type | None,
                  to_request: Callable | None = None) -> str:
    """A Google-style docstring (what Gradio's ``view_api`` and MCP read): the description and one line per
    parameter, from the request field's help (``backends.common.params``) or else ``to_request``'s own
    ``Args:`` line."""
    declared = fields_of(request_type) if request_type is not None else {}
    own = gr.utils.get_function_description(to_request)[1] if to_request is not None else {}
    lines = [" ".join(description.split()), "", "Args:"]
    for name in names:
        help_text = declared[name].describe() if name in declared else own.get(name, "")
        lines.append(f"    {name}: {' '.join(help_text.split())}")
    return "\n".join(lines)


def documented(request_type: type | None = None):
    """A light handler's API docs: its first docstring paragraph, then each parameter's line from the request's
    field of that name (or the handler's own ``Args:`` line), so a light action restates no limit either."""

    def wrap(fn: Callable) -> Callable:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.annotation is inspect.Parameter.empty or "Request" not in str(p.annotation)]
        first = (inspect.getdoc(fn) or fn.__name__).split("\n\n")[0]
        first = first.split("Args:")[0]
        fn.__doc__ = api_docstring(first, names, request_type, fn)
        return fn

    return wrap
