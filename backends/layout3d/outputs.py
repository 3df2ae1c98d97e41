"""Raw outputs of a scene and its views: per stage the image (PNG), the box depth (16-bit PNG), the layout
(JSON) and the object's mask; the scene's summary (what the run card says of it); the enlarged pictures
and mask overlays the tab shows. The run card itself is the Action's (``actions.SCENE``): the tab and the
CLI both write through here, and ``iclr25-studio replay run.json`` replays a scene to the same pixels.
Torch-free to import (the tab imports it when it is built)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from backends.common.files import write_text
from backends.common.imageio import save_depth_png16, save_png

if TYPE_CHECKING:
    from .service import SceneResult
    from .stages import SceneSession, Stage

MASK_COLOURS = np.array([(230, 25, 75), (60, 180, 75), (67, 99, 216), (245, 130, 49), (145, 30, 180)], np.uint8)


def scene_card(session: SceneSession) -> dict:
    """What a run card says of a scene: model, device, settings and every stage's summary (with its layout)."""
    return {"model": session.model_id, "device": session.device, "settings": asdict(session.settings),
            "size": session.size, "stages": [s.summary() for s in session.stages]}


def result_summary(result: SceneResult) -> dict:
    """The scene's card, the stages this run made and how long it took (the run card's ``result``)."""
    return {**result.summary, "new": list(result.new), "seconds": round(result.seconds, 3),
            "vocabulary_warning": result.vocabulary_warning}


def write_stage(stage: Stage, folder: Path) -> dict[str, Path]:
    """One stage's files, by name (``stageNN``, ``stageNN_depth16``, ``stageNN_layout``, ``stageNN_object_mask``)."""
    folder.mkdir(parents=True, exist_ok=True)
    name = f"stage{stage.index:02d}"
    paths = {
        name: save_png(stage.image, folder / f"{name}.png"),
        f"{name}_depth16": save_depth_png16(stage.depth, folder / f"{name}_depth16.png"),
        f"{name}_layout": folder / f"{name}_layout.json",
    }
    write_text(paths[f"{name}_layout"], stage.layout.to_json())
    if stage.object_mask is not None:
        paths[f"{name}_object_mask"] = save_png((stage.object_mask * 255).astype("uint8"),
                                                folder / f"{name}_object_mask.png")
    return paths


def write_scene(stages: list[Stage], folder: Path) -> dict[str, Path]:
    """Every stage's files (the Action's ``write``: the run card goes beside them)."""
    paths: dict[str, Path] = {}
    for st in stages:
        paths.update(write_stage(st, Path(folder)))
    return paths


def last_stage_files(stages: list[Stage], paths: dict[str, Path]) -> list[Path]:
    """What a person downloads first: the last stage's image, depth and layout, and the run card."""
    name = f"stage{stages[-1].index:02d}"
    return [paths[k] for k in (name, f"{name}_depth16", f"{name}_layout", "run") if k in paths]


# --- views ---------------------------------------------------------------------------------------

def enlarge(image: np.ndarray, size: int) -> np.ndarray:
    """A model-size picture at ``size``×``size`` pixels (bicubic), as the tab shows it."""
    from PIL import Image

    return np.asarray(Image.fromarray(image).resize((size, size), Image.BICUBIC))


def overlay_masks(stage: Stage, stages: list[Stage]) -> np.ndarray:
    """The stage's image with every object's mask (as created) tinted in its box colour."""
    img = stage.image.astype(np.float32)
    for j, idx in sorted(stage.created.items()):
        mask = stages[idx].object_mask if idx < len(stages) else None
        if mask is None:
            continue
        c = MASK_COLOURS[j % len(MASK_COLOURS)].astype(np.float32)
        img[mask] = 0.45 * img[mask] + 0.55 * c
    return img.clip(0, 255).astype(np.uint8)


def scene_picture(stages: list[Stage], show_masks: bool, size: int) -> np.ndarray:
    """The last stage, enlarged, with its objects' masks tinted when asked."""
    last = stages[-1]
    return enlarge(overlay_masks(last, stages) if show_masks else last.image, size)


def history_items(stages: list[Stage], size: int = 128) -> list[tuple[np.ndarray, str]]:
    """Every stage's picture and what it did, for the history gallery."""
    return [(enlarge(s.image, size), f"{s.index}: {s.action}") for s in stages]
