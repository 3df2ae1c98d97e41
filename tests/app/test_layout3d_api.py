"""The 3D Layout tab through gradio_client: depth preview, generate, next stage, go back, bad input."""

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

SCENE = "a green lawn under a pale blue sky"
LAYOUT = {"scene_prompt": SCENE, "boxes": [
    {"prompt": "a red cube", "center": [-0.6, 1.0, 0.35], "size": [0.7, 0.7, 0.7], "yaw_deg": 10},
    {"prompt": "a yellow sphere", "center": [0.65, 1.2, 0.35], "size": [0.7, 0.7, 0.7], "yaw_deg": 0}]}
ARGS = ("layout3d-embedded", 3, 6, 3.0, "bas", 0.9, 0.5, "multiply", False)


def test_depth_preview_is_cheap_and_validates(client):
    rows, depth, msg, scene = client.predict(json.dumps(LAYOUT), api_name="/layout3d_depth")
    assert "valid layout" in msg and scene == SCENE
    assert [r[0] for r in rows["data"]] == ["a red cube", "a yellow sphere"]
    img = np.asarray(Image.open(depth))
    assert img.shape[:2] == (240, 240) and img.max() > 200
    bad = {**LAYOUT, "boxes": [{**LAYOUT["boxes"][0], "center": [9, 1, 0.35]}]}
    _, _, msg, _ = client.predict(json.dumps(bad), api_name="/layout3d_depth")
    assert "outside the room" in msg


def test_generate_next_stage_and_go_back(client):
    _, image, history, status, summary, files = client.predict(json.dumps(LAYOUT), *ARGS,
                                                               api_name="/layout3d_generate")
    assert [s["kind"] for s in summary["stages"]] == ["empty", "insert", "insert"]
    assert "layout3d-embedded" in status and "cpu" in status
    names = {Path(f).name for f in files}
    assert {"stage02.png", "stage02_depth16.png", "stage02_layout.json", "stages.json"} <= names
    raw = np.asarray(Image.open(next(f for f in files if f.endswith("stage02.png"))))
    assert raw.shape == (64, 64, 3)
    depth16 = np.asarray(Image.open(next(f for f in files if f.endswith("_depth16.png"))))
    assert depth16.dtype == np.uint16 and depth16.max() > 30000

    moved = json.loads(json.dumps(LAYOUT))
    moved["boxes"][1]["center"] = [0.35, 0.9, 0.35]
    _, _, history, status, summary, files = client.predict(json.dumps(moved), False, api_name="/layout3d_next_stage")
    assert [s["kind"] for s in summary["stages"]][-1] == "move" and len(history) == 4
    text, _, history, _, summary, _ = client.predict(2, False, api_name="/layout3d_go_back")
    assert len(summary["stages"]) == 3 and json.loads(text)["boxes"][1]["center"][0] == 0.65


def test_bad_layout_is_a_clear_error(client):
    with pytest.raises(Exception, match="not valid JSON"):
        client.predict("{oops", *ARGS, api_name="/layout3d_generate")
    too_many = {**LAYOUT, "boxes": LAYOUT["boxes"] * 3}
    with pytest.raises(Exception, match="At most 5 boxes"):
        client.predict(json.dumps(too_many), *ARGS, api_name="/layout3d_generate")


def test_next_stage_before_generate_is_a_clear_error(live_app):
    from gradio_client import Client

    fresh = Client(live_app[1], verbose=False)  # a new session: nothing generated yet
    with pytest.raises(Exception, match="Generate a scene first"):
        fresh.predict(json.dumps(LAYOUT), False, api_name="/layout3d_next_stage")
