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
    assert {"stage02.png", "stage02_depth16.png", "stage02_layout.json", "run.json"} <= names
    raw = np.asarray(Image.open(next(f for f in files if f.endswith("stage02.png"))))
    assert raw.shape == (64, 64, 3)
    depth16 = np.asarray(Image.open(next(f for f in files if f.endswith("_depth16.png"))))
    assert depth16.dtype == np.uint16 and depth16.max() > 30000

    moved = json.loads(json.dumps(LAYOUT))
    moved["boxes"][1]["center"] = [0.35, 0.9, 0.35]
    _, masked, history, status, summary, files = client.predict(json.dumps(moved), True,
                                                                api_name="/layout3d_next_stage")
    assert [s["kind"] for s in summary["stages"]][-1] == "move" and len(history) == 4
    plain = client.predict(False, api_name="/layout3d_masks")  # the API's show_masks was honoured
    assert not np.array_equal(np.asarray(Image.open(masked)), np.asarray(Image.open(plain)))
    text, _, history, _, summary, _, *_ = client.predict(2, False, api_name="/layout3d_go_back")
    assert len(summary["stages"]) == 3 and json.loads(text)["boxes"][1]["center"][0] == 0.65


def test_generate_takes_named_parameters_the_rest_their_defaults(client):
    """`client.predict(api_name=..., **named)`: a script names what it sets; the others are the tab's controls'
    values (the request's defaults; CFG and blending: the default model's own, 5 and 0.95)."""
    from backends.layout3d.requests import SceneRequest

    *_, summary, files = client.predict(layout=json.dumps(ONE_BOX), num_inference_steps=3, seed=9,
                                        api_name="/layout3d_generate")
    assert [s["kind"] for s in summary["stages"]] == ["empty", "insert"]
    settings = summary["settings"]
    assert settings["num_inference_steps"] == 3 and settings["seed"] == 9
    assert settings["guidance_scale"] == 5.0 and settings["blend_fraction"] == 0.95
    assert settings["method"] == SceneRequest.method and settings["dsa"]["masking"] == SceneRequest.dsa_masking
    card = json.loads(Path(next(f for f in files if f.endswith("run.json"))).read_text())
    assert card["request"]["model"] == "layout3d-embedded" and card["request"]["num_inference_steps"] == 3
    with pytest.raises(Exception, match="maximum value 50|from 2 to 50"):  # the request's range, on the API too
        client.predict(layout=json.dumps(ONE_BOX), num_inference_steps=500, api_name="/layout3d_generate")


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


ONE_BOX = {"scene_prompt": SCENE, "boxes": [LAYOUT["boxes"][0]]}


def test_a_downloaded_run_card_reproduces_its_images_through_the_cli(client, tmp_path):
    """Download from the tab (generate + a move), rerun with `iclr25-studio replay run.json` (and the old
    `layout3d --run` flag), compare the pixels: the card of a later stage holds the whole scene."""
    import shutil
    import subprocess
    import sys

    client.predict(json.dumps(ONE_BOX), "layout3d-embedded", 5, 4, 3.0, "bas", 0.9, 0.5, "multiply", False,
                   api_name="/layout3d_generate")
    moved = json.loads(json.dumps(ONE_BOX))
    moved["boxes"][0]["center"] = [-0.2, 0.9, 0.35]
    *_, summary, files = client.predict(json.dumps(moved), False, api_name="/layout3d_next_stage")
    assert [s["kind"] for s in summary["stages"]] == ["empty", "insert", "move"]
    assert summary["settings"]["seed"] == 5 and summary["settings"]["num_inference_steps"] == 4
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    for f in files:  # a person saves the downloads into one folder
        shutil.copy(f, downloads / Path(f).name)
    card = json.loads((downloads / "run.json").read_text())
    assert card["action"] == "layout3d_scene" and card["request"]["model"] == "layout3d-embedded"
    assert card["request"]["seed"] == 5 and card["request"]["num_inference_steps"] == 4
    assert len(card["request"]["history"]) == 2 and card["request"]["history"][0]["boxes"] == []
    assert card["result"]["new"] == [2] and card["result"]["stages"][2]["kind"] == "move"
    for command, out in ((["replay", str(downloads / "run.json")], tmp_path / "again"),
                         (["layout3d", "--run", str(downloads / "run.json")], tmp_path / "flag")):
        res = subprocess.run([sys.executable, "-m", "app", *command, "--out", str(out)], capture_output=True,
                             text=True, timeout=600)
        assert res.returncode == 0, res.stderr
        for name in ("stage02.png", "stage02_depth16.png"):
            assert np.array_equal(np.asarray(Image.open(out / name)), np.asarray(Image.open(downloads / name))), name
        again = json.loads((out / "run.json").read_text())
        assert again["request"] == card["request"] and again["result"]["settings"] == summary["settings"]
        assert [s["layout"] for s in again["result"]["stages"]] == [s["layout"] for s in summary["stages"]]


def test_an_expired_scene_says_so_and_rebuilds_from_its_run_card(live_app, tmp_path):
    """A scene dropped for memory is reported as expired, not as a later failure; its run.json brings it back."""
    import shutil

    from gradio_client import Client, handle_file

    from backends.layout3d import sessions
    from backends.layout3d.sessions import SceneStore

    saved, sessions._STORE = sessions._STORE, SceneStore(budget_mb=0.5)  # room for one small scene
    try:
        alice, bob = Client(live_app[1], verbose=False), Client(live_app[1], verbose=False)
        args = ("layout3d-embedded", 1, 3, 3.0, "bas", 0.9, 0.5, "multiply", False)
        *_, files = alice.predict(json.dumps(ONE_BOX), *args, api_name="/layout3d_generate")
        card = tmp_path / "run.json"
        shutil.copy(next(f for f in files if f.endswith("run.json")), card)
        bob.predict(json.dumps(ONE_BOX), *args, api_name="/layout3d_generate")
        moved = json.loads(json.dumps(ONE_BOX))
        moved["boxes"][0]["center"] = [-0.2, 0.9, 0.35]
        with pytest.raises(Exception, match="This scene expired.*Reload its run.json"):
            alice.predict(json.dumps(moved), False, api_name="/layout3d_next_stage")
        *_, summary, _, text = alice.predict(handle_file(str(card)), False, api_name="/layout3d_rebuild")
        assert [s["kind"] for s in summary["stages"]] == ["empty", "insert"] and json.loads(text)["boxes"]
        *_, summary, _ = alice.predict(json.dumps(moved), False, api_name="/layout3d_next_stage")
        assert [s["kind"] for s in summary["stages"]] == ["empty", "insert", "move"]
    finally:
        sessions._STORE = saved


def test_the_depth_preview_answers_while_another_user_generates(client, live_app):
    """Layout edits have their own queue: a live depth preview never waits behind a generation (it answers while
    the generation is still running; no clock: pytest-timeout guards against a hang)."""
    import time

    from gradio_client import Client

    heavy = Client(live_app[1], verbose=False)  # another user
    job = heavy.submit(json.dumps(LAYOUT), "layout3d-embedded", 3, 50, 3.0, "bas", 0.9, 0.5, "multiply", False,
                       api_name="/layout3d_generate")
    while not job.done() and not any("stage" in str(o) or o[0] is not None for o in job.outputs()):
        time.sleep(0.2)  # until the generation is under way (its first preview or status)
    try:
        assert not job.done()
        _, _, msg, _ = client.predict(json.dumps(LAYOUT), api_name="/layout3d_depth")
        assert "valid layout" in msg
        assert not job.done(), "the generation ended first, so this test proved nothing"
    finally:
        heavy.predict(api_name="/layout3d_stop")
        job.result(timeout=180)
        heavy.close()


def test_layout_json_of_the_wrong_shape_is_a_clear_error_everywhere(client, tmp_path):
    from gradio_client import handle_file

    text = client.predict(SCENE, json.dumps(LAYOUT), api_name="/layout3d_scene")
    assert json.loads(text)["scene_prompt"] == SCENE and len(json.loads(text)["boxes"]) == 2
    assert json.loads(client.predict(SCENE, "", api_name="/layout3d_scene")) == {"scene_prompt": SCENE, "boxes": []}
    for broken in ("[1, 2]", '"a room"', "5", "{oops"):  # stays as typed: an error, not a wiped layout
        with pytest.raises(Exception, match="not a valid layout") as e:
            client.predict(SCENE, broken, api_name="/layout3d_scene")
        assert "Internal error" not in str(e.value)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(Exception, match="not valid JSON") as e:
        client.predict(handle_file(str(deep)), api_name="/layout3d_load")
    assert "Internal error" not in str(e.value)
    with pytest.raises(Exception, match="not a readable run card") as e:
        client.predict(handle_file(str(deep)), False, api_name="/layout3d_rebuild")
    assert "Internal error" not in str(e.value)


def test_add_box_places_the_new_box_in_free_floor_space(client):
    from backends.layout3d.layout import Layout, footprint

    text = client.predict(json.dumps(LAYOUT), "a green cone", api_name="/layout3d_add_box")
    layout = Layout.from_json(text)
    assert [b.prompt for b in layout.boxes] == ["a red cube", "a yellow sphere", "a green cone"]
    new = footprint(layout.boxes[-1])
    for old in map(footprint, layout.boxes[:-1]):  # its footprint overlaps neither of the others
        assert new[2] <= old[0] or old[2] <= new[0] or new[3] <= old[1] or old[3] <= new[1], (new, old)
    with pytest.raises(Exception, match="Type what goes in the new box"):
        client.predict(json.dumps(LAYOUT), " ", api_name="/layout3d_add_box")


def test_unknown_words_are_flagged_without_generating(client):
    chair = {**LAYOUT, "boxes": [*LAYOUT["boxes"], {**LAYOUT["boxes"][0], "prompt": "a wooden chair",
                                                     "center": [0.0, 2.2, 0.35]}]}
    flag = client.predict(json.dumps(chair), "layout3d-embedded", api_name="/layout3d_check_words")
    assert "box 3 ('a wooden chair'): 'chair'" in flag and "'wooden'" not in flag
    assert client.predict(json.dumps(LAYOUT), "layout3d-embedded", api_name="/layout3d_check_words") == ""
    assert client.predict(json.dumps(chair), "sd15", api_name="/layout3d_check_words") == ""  # open vocabulary
