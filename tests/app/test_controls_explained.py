"""Every control a person sets is explained in one line (its ``info``), in every tab."""

import gradio as gr

CONTROLS = (gr.Textbox, gr.Number, gr.Slider, gr.Dropdown, gr.Radio, gr.Checkbox, gr.CheckboxGroup)
PLUMBING = "av-hidden"  # hidden text boxes that carry data between the page's scripts and the server


def test_every_visible_control_has_a_one_line_explanation(live_app):
    demo, _ = live_app
    missing, long = [], []
    controls = [b for b in demo.blocks.values() if isinstance(b, CONTROLS)]
    for b in controls:
        if b.visible is False or getattr(b, "interactive", None) is False or PLUMBING in (b.elem_classes or []):
            continue
        name = f"{type(b).__name__} {b.label!r} ({b.elem_id})"
        if not (b.info or "").strip():
            missing.append(name)
        elif "\n" in b.info or len(b.info) > 320:
            long.append(name)
    assert len(controls) > 80  # every tab's controls were seen
    assert not missing, f"controls without an explanation: {missing}"
    assert not long, f"explanations longer than a line or two: {long}"
