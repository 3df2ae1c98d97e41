"""Raw outputs of a scene: per stage the image (PNG), the box depth (16-bit PNG), the layout (JSON),
and a ``stages.json`` with what every stage did — written the same way by the tab and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from backends.common.imageio import save_depth_png16, save_png

from .stages import Stage


def write_stage(stage: Stage, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    name = f"stage{stage.index:02d}"
    paths = {
        "image": save_png(stage.image, folder / f"{name}.png"),
        "depth": save_depth_png16(stage.depth, folder / f"{name}_depth16.png"),
        "layout": folder / f"{name}_layout.json",
    }
    paths["layout"].write_text(stage.layout.to_json())
    if stage.object_mask is not None:
        paths["mask"] = save_png((stage.object_mask * 255).astype("uint8"), folder / f"{name}_object_mask.png")
    return paths


def write_scene(stages: list[Stage], summary: dict, folder: Path) -> dict[str, Path]:
    """Every stage's files plus ``stages.json``; returns the last stage's paths and the summary path."""
    paths: dict[str, Path] = {}
    for st in stages:
        paths = write_stage(st, folder)
    paths["summary"] = folder / "stages.json"
    paths["summary"].write_text(json.dumps(summary, indent=1, default=str))
    return paths
