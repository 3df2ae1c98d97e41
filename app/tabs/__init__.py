"""The tabs of the app, in display order. Adding a tab is one line in ``all_tabs``: its module's ``TAB``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr


@dataclass(frozen=True)
class TabSpec:
    name: str  # the capability's name: backend package, CLI subcommand, bench and test files
    title: str  # what the user sees on the tab
    build: Callable[[gr.Blocks], None]  # builds the tab's components and events inside a gr.Tab


def all_tabs() -> list[TabSpec]:
    from . import avatar, counterfactual, games, layout3d, system, textedit, videodepth

    return [
        layout3d.TAB,
        counterfactual.TAB,
        textedit.TAB,
        avatar.TAB,
        videodepth.TAB,
        games.TAB,
        system.TAB,
    ]
