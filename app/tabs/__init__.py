"""The tabs of the app, in display order: one per capability of ``backends.CAPABILITIES`` (its module
``app/tabs/<capability>.py``, or a package there, exposes ``TAB``), then the System tab. A new capability's
tab appears when its name is added to ``CAPABILITIES``, in the group its spec names (:func:`grouped`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr


@dataclass(frozen=True)
class TabSpec:
    name: str  # the capability's name: backend package, CLI subcommand, bench and test files
    title: str  # what the user sees on the tab
    build: Callable[[gr.Blocks], None]  # builds the tab's components and events inside a gr.Tab


def all_tabs() -> list[TabSpec]:
    from backends import CAPABILITIES

    from . import system

    return [importlib.import_module(f"{__name__}.{name}").TAB for name in CAPABILITIES] + [system.TAB]


def grouped(tabs: list[TabSpec]) -> list[tuple[str, list[TabSpec]]]:
    """(group, its tabs) in ``backends.common.capability.GROUPS`` order, empty groups left out; the System tab
    (no capability) is not in any group."""
    from backends import spec
    from backends.common.capability import GROUPS

    groups = {g: [] for g in GROUPS}
    for tab in tabs:
        if tab.name != "system":
            groups[spec(tab.name).group].append(tab)
    return [(g, members) for g, members in groups.items() if members]
