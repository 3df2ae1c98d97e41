"""What a person hands the 3D Layout tab, read into layouts and requests: the box table, the layout JSON
(typed, or a file), and a scene's run card (``run.json``; an older ``stages.json`` too) to rebuild.
Torch-free; every problem is an ``InputError`` saying what to fix."""

from __future__ import annotations

import json
from pathlib import Path

from backends.common import jsontext
from backends.common.errors import InputError
from backends.common.params import check_request

from .layout import Layout
from .requests import SceneRequest


def layout_from_rows(rows, scene_prompt: str) -> dict:
    """The layout JSON of the box table (a prompt and x y z w d h yaw per row; empty rows skipped)."""
    boxes = []
    values = rows.values.tolist() if hasattr(rows, "values") else (rows or [])
    for i, row in enumerate(values):
        if row is None or all(v in (None, "") for v in row):
            continue
        try:
            prompt = str(row[0])
            x, y, z, w, d, h, yaw = (float(v) for v in row[1:8])
        except (TypeError, ValueError, IndexError):
            raise InputError(f"Row {i + 1} of the box table needs a prompt and seven numbers (x y z w d h yaw).") from None
        boxes.append({"prompt": prompt, "center": [x, y, z], "size": [w, d, h], "yaw_deg": yaw})
    return {"scene_prompt": scene_prompt, "boxes": boxes}


def with_scene_prompt(text: str, scene: str) -> dict:
    """The layout JSON with another scene prompt; JSON that is not a layout is refused (it stays as typed)."""
    try:
        data = jsontext.loads(text) if (text or "").strip() else {"boxes": []}
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        raise InputError("The layout JSON is not a valid layout (a JSON object with 'scene_prompt' and "
                         "'boxes'); fix it, then choose the scene again.")
    data["scene_prompt"] = scene
    return data


def read_layout_file(path) -> Layout:
    """A layout JSON file, checked."""
    if path is None:
        raise InputError("Choose a layout JSON file.")
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError):
        raise InputError("That file is not a readable text file.") from None
    return Layout.from_json(text)


def read_scene_card(path) -> SceneRequest:
    """The request a scene's run card replays: a ``run.json`` of the scene action, or an older
    ``stages.json`` (its model, settings and every stage's layout)."""
    from backends.common.runcard import FORMAT, read_card

    from .actions import SCENE

    if path is None:
        raise InputError("Choose a run.json (the download of a scene).")
    try:
        card = jsontext.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        raise InputError("That file is not a readable run card (a scene's run.json).") from None
    if isinstance(card, dict) and card.get("format") == FORMAT:
        request = SCENE.request_from_card(read_card(Path(path)), Path(path).parent)
    elif isinstance(card, dict) and "stages" in card and "settings" in card:
        request = request_from_stages_json(card)
    else:
        raise InputError("That JSON is not a 3D Layout run card (a scene's run.json).")
    request.scene_key = ""
    check_request(request)  # every setting in its declared range (a card is an upload)
    request.validate()
    return request


def request_from_stages_json(card: dict) -> SceneRequest:
    """An older card (``stages.json``: model, settings, stages with their layouts) as a request."""
    try:
        settings, layouts = card["settings"], [st["layout"] for st in card["stages"]]
        dsa = settings.get("dsa") or {}
        request = SceneRequest(layouts[-1], model=card["model"], seed=settings["seed"],
                               num_inference_steps=settings["num_inference_steps"],
                               guidance_scale=settings["guidance_scale"], method=settings.get("method", "bas"),
                               blend_fraction=settings["blend_fraction"],
                               dsa_start_fraction=dsa.get("start_fraction", 0.5),
                               dsa_masking=dsa.get("masking", "multiply"), history=layouts[:-1])
    except (KeyError, TypeError, AttributeError, IndexError):
        raise InputError("That JSON is not a 3D Layout run card (stages.json with model, settings and stages).") from None
    check_request(request)  # every setting in its declared range (a card is an upload)
    request.validate()
    return request
