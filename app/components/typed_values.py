"""A value typed into a control of a tab opened a moment ago stays typed, in every tab.

Gradio's page (6.x) draws the contents of a tab only when the tab is first opened, and a moment later (after a
tick, once the page settles, and one frame) writes every newly drawn component's initial properties into it
again (``render_previously_invisible_children`` in its frontend): whatever the person typed in between went
back to its default. The page skips components whose visibility the server set since it loaded, so one
page-load event (no queue, before any tab is opened) tells it that the controls are visible: they are then
drawn with their initial values and left as the person sets them.
"""

from __future__ import annotations

import gradio as gr

# the controls a person types into or sets by hand
CONTROL_TYPES = (gr.Slider, gr.Number, gr.Textbox, gr.Dropdown, gr.Radio, gr.Checkbox, gr.CheckboxGroup)


def _written_at_load(demo: gr.Blocks) -> set[int]:
    """Components a page-load handler writes: their visibility is that handler's to set."""
    ids: set[int] = set()
    for fn in demo.fns.values():
        if any(event == "load" for _, event in fn.targets):
            ids.update(block._id for block in fn.outputs)
    return ids


def typed_controls(demo: gr.Blocks) -> list:
    """Every control drawn visible and editable, except those a page-load handler writes."""
    skip = _written_at_load(demo)
    return [block for block in demo.blocks.values()
            if isinstance(block, CONTROL_TYPES) and block.visible is True and block.interactive is not False
            and block._id not in skip]


def keep_typed_values(demo: gr.Blocks, controls: list) -> None:
    """Once per page load, before any tab is opened: ``controls`` are visible (see the module's docstring)."""
    if not controls:
        return

    def visible():
        return [gr.update(visible=True)] * len(controls)

    demo.load(visible, outputs=controls, api_visibility="private", queue=False, show_progress="hidden")
