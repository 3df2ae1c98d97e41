"""Raw outputs of a scene: per stage the image (PNG), the box depth (16-bit PNG), the layout (JSON),
and ``stages.json`` — the run card: the model, every setting, and what every stage did with its
layout. The tab and the CLI both write through here, and ``iclr25-studio layout3d --run stages.json``
replays a card to the same pixels."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from backends.common.files import write_text
from backends.common.imageio import save_depth_png16, save_png

from .stages import Stage

if TYPE_CHECKING:
    from .stages import SceneSession

REPRODUCE = "iclr25-studio layout3d --run stages.json --out <folder>"


def scene_card(session: SceneSession) -> dict:
    """``stages.json``: model, device, settings and every stage's summary (with its layout)."""
    return {"model": session.model_id, "device": str(session.pipe.device), "settings": asdict(session.settings),
            "size": session.size, "stages": [s.summary() for s in session.stages], "reproduce": REPRODUCE}


def write_stage(stage: Stage, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    name = f"stage{stage.index:02d}"
    paths = {
        "image": save_png(stage.image, folder / f"{name}.png"),
        "depth": save_depth_png16(stage.depth, folder / f"{name}_depth16.png"),
        "layout": folder / f"{name}_layout.json",
    }
    write_text(paths["layout"], stage.layout.to_json())
    if stage.object_mask is not None:
        paths["mask"] = save_png((stage.object_mask * 255).astype("uint8"), folder / f"{name}_object_mask.png")
    return paths


def write_scene(stages: list[Stage], card: dict, folder: Path) -> dict[str, Path]:
    """Every stage's files plus ``stages.json``; returns the last stage's paths and the card's path."""
    paths: dict[str, Path] = {}
    for st in stages:
        paths = write_stage(st, folder)
    paths["summary"] = folder / "stages.json"
    write_text(paths["summary"], json.dumps(card, indent=1, default=str))
    return paths
