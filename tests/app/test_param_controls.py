"""A tab's controls are made from the request's declarations and cannot restate a limit."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr
import pytest

from app.components.params import control, disagreement
from backends.common.params import fields_of, param


@dataclass
class Req:
    steps: int = param(20, minimum=1, maximum=50, label="Steps", help="Denoising steps.")
    seed: int = param(0, minimum=0, maximum=100, help="Seed.")
    method: str = param("bas", choices=("bas", "blend"), help="Which method.")
    previews: bool = param(True, help="Show previews.")


def test_controls_take_range_default_choices_label_and_help_from_the_request():
    with gr.Blocks():
        steps = control(Req, "steps", elem_id="x")
        seed = control(Req, "seed", widget="number")
        method = control(Req, "method", widget="radio")
        previews = control(Req, "previews")
    assert isinstance(steps, gr.Slider) and (steps.minimum, steps.maximum, steps.value, steps.step) == (1, 50, 20, 1)
    assert steps.label == "Steps" and steps.info == "Denoising steps." and steps.elem_id == "x"
    assert isinstance(seed, gr.Number) and seed.precision == 0 and seed.maximum == 100
    assert isinstance(method, gr.Radio) and method.value == "bas"
    assert isinstance(previews, gr.Checkbox) and previews.value is True
    for component, name in [(steps, "steps"), (seed, "seed"), (method, "method"), (previews, "previews")]:
        assert disagreement(fields_of(Req)[name], component) == []


def test_a_control_that_restates_a_limit_is_refused_and_a_drifted_one_is_found():
    with gr.Blocks(), pytest.raises(TypeError, match="come from the request"):
        control(Req, "steps", maximum=99)
    with gr.Blocks():
        drifted = gr.Slider(1, 40, value=20)
    assert disagreement(fields_of(Req)["steps"], drifted) == ["maximum 40 ≠ 50"]
