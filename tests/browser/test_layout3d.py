"""The 3D Layout tab in a real browser: add boxes in the 3D editor, generate, drag a box, next stage."""

import io
import json
import re

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import expect
from scipy import ndimage

from backends.common.imagemetrics import psnr
from backends.layout3d.layout import Layout
from tests.browser.kept import expect_kept

pytestmark = pytest.mark.browser
SCENE = "a green lawn under a pale blue sky"


def open_tab(page):
    page.get_by_role("tab", name="3D Layout").click()
    expect(page.locator("#l3d-editor canvas")).to_be_visible(timeout=30_000)
    expect(page.locator("#l3d-layout-status")).to_contain_text("valid layout", timeout=60_000)  # loaded


def layout_json(page) -> dict:
    return json.loads(page.locator("#l3d-json textarea").input_value())


def set_json(page, data: dict):
    box = page.locator("#l3d-json textarea")
    for _ in range(5):  # the textbox may re-render once while the tab settles
        box.fill(json.dumps(data))
        page.wait_for_timeout(400)
        if json.loads(box.input_value()) == data:
            return
    raise AssertionError("the layout JSON did not stick")


def add_box(page, prompt: str):
    page.locator("#l3d-editor .be-prompt").fill(prompt)
    page.locator("#l3d-editor .be-add").click()


def box_position(page, i: int) -> dict:
    """Where box ``i`` is on the screen, the editor scrolled into view first (pressing Generate, lower on the
    page, may have scrolled it out)."""
    page.locator("#l3d-editor canvas").scroll_into_view_if_needed()
    return page.evaluate(f"document.querySelector('#l3d-editor .box-editor').boxScreenPosition({i})")


def download(page, name: str) -> bytes:
    href = page.locator(f'#l3d-files a[download="{name}"]').first.get_attribute("href")
    return page.request.get(href).body()


def generate_two_boxes(page) -> tuple[list[dict], np.ndarray]:
    """Add a red cube and a yellow sphere in the editor and Generate at 8 steps: (the boxes, the stage-2 image)."""
    open_tab(page)
    set_json(page, {"scene_prompt": SCENE, "boxes": []})
    add_box(page, "a red cube")
    add_box(page, "a yellow sphere")
    expect(page.locator("#l3d-table")).to_contain_text("a yellow sphere", timeout=60_000)
    boxes = layout_json(page)["boxes"]
    assert [b["prompt"] for b in boxes] == ["a red cube", "a yellow sphere"]
    steps = page.locator("#l3d-steps input[type=number]")
    steps.fill("8")
    steps.press("Enter")
    page.locator("#l3d-generate").click()
    expect(page.locator("#l3d-status")).to_contain_text("Stage 2: insert box 2", timeout=180_000)
    return boxes, np.asarray(Image.open(io.BytesIO(download(page, "stage02.png"))).convert("RGB"))


def test_add_two_boxes_generate_drag_one_next_stage_keeps_the_other(page):
    boxes, before = generate_two_boxes(page)
    status = page.locator("#l3d-status")

    # drag box 2 across the floor, towards the camera and the middle; box 1 is clicked first so that the
    # gizmo (on box 2 since it was added) does not catch the drag and move it along one axis only
    first = box_position(page, 0)
    page.mouse.click(first["x"], first["y"])
    pos = box_position(page, 1)
    page.mouse.move(pos["x"], pos["y"])
    page.mouse.down()
    page.mouse.move(pos["x"] - 25, pos["y"] + 8, steps=10)
    page.mouse.up()
    page.wait_for_timeout(500)
    moved = layout_json(page)["boxes"]
    assert moved[0] == boxes[0]
    assert moved[1]["center"][0] < boxes[1]["center"][0] - 0.1, moved[1]

    page.locator("#l3d-next").click()
    expect(status).to_contain_text("Stage 3: move box 2", timeout=180_000)
    expect(page.locator("#l3d-history img")).to_have_count(4)
    after = np.asarray(Image.open(io.BytesIO(download(page, "stage03.png"))).convert("RGB"))
    layout = Layout.from_json(download(page, "stage03_layout.json").decode())
    old_layout = Layout(layout.scene_prompt, (layout.boxes[0], Layout.from_json(json.dumps(
        {"scene_prompt": SCENE, "boxes": boxes})).boxes[1]), layout.camera)
    moved_region = ndimage.binary_dilation(layout.box_mask(1) | old_layout.box_mask(1), iterations=2)
    keep = layout.box_mask(0) & ~moved_region  # the other object, away from both places of the moved one
    assert keep.sum() > 20
    assert psnr(before, after, keep) >= 30.0  # the other object is preserved
    assert psnr(before, after, layout.box_mask(1)) < 30.0  # and the moved one did change


def test_delete_the_first_box_is_one_removal_and_the_others_stay(page):
    """Delete box 1 of 2 in the editor, then Next stage: one stage that removes it (box 2 moves up in the list;
    it is not re-prompted or moved into box 1's place), and box 2's object is kept."""
    boxes, before = generate_two_boxes(page)
    status = page.locator("#l3d-status")
    first = box_position(page, 0)
    page.mouse.click(first["x"], first["y"])
    page.locator("#l3d-editor [data-act=delete]").click()
    expect(page.locator("#l3d-table")).not_to_contain_text("a red cube", timeout=30_000)
    assert layout_json(page)["boxes"] == boxes[1:]

    page.locator("#l3d-next").click()
    expect(status).to_contain_text("Stage 3: remove box 1", timeout=180_000)
    expect(page.locator("#l3d-history img")).to_have_count(4)
    layout = Layout.from_json(download(page, "stage03_layout.json").decode())
    assert [b.prompt for b in layout.boxes] == ["a yellow sphere"]
    after = np.asarray(Image.open(io.BytesIO(download(page, "stage03.png"))).convert("RGB"))
    old = Layout.from_json(json.dumps({"scene_prompt": SCENE, "boxes": boxes}), layout.camera)
    keep = layout.box_mask(0) & ~ndimage.binary_dilation(old.box_mask(0), iterations=8)  # box 2, away from box 1
    assert keep.sum() > 20
    assert psnr(before, after, keep) >= 30.0


def test_bad_layout_json_shows_a_message_and_keeps_the_editor(page):
    open_tab(page)
    good = layout_json(page)
    page.locator("#l3d-json textarea").fill('{"scene_prompt": "a room", "boxes": [{"prompt": "x", "center": [9, 0, 0]')
    expect(page.locator("#l3d-layout-status")).to_contain_text(re.compile("not valid JSON"), timeout=60_000)
    page.locator("#l3d-generate").click()
    expect(page.get_by_text("not valid JSON").first).to_be_visible(timeout=30_000)
    set_json(page, good)
    expect(page.locator("#l3d-layout-status")).to_contain_text("valid layout", timeout=60_000)


def test_editor_renders_only_on_change_and_colours_boxes_by_their_prompt(page):
    open_tab(page)
    set_json(page, {"scene_prompt": SCENE, "boxes": [
        {"prompt": "a blue sphere", "center": [-0.6, 1.0, 0.35], "size": [0.7, 0.7, 0.7], "yaw_deg": 0},
        {"prompt": "a red cube", "center": [0.6, 1.0, 0.35], "size": [0.7, 0.7, 0.7], "yaw_deg": 0}]})
    root = "document.querySelector('#l3d-editor .box-editor')"
    page.wait_for_timeout(1500)  # let the page settle
    colours = page.evaluate(f"[{root}.boxColour(0), {root}.boxColour(1)]")
    rgb = [tuple(int(c[k:k + 2], 16) for k in (1, 3, 5)) for c in colours]
    assert rgb[0][2] > 150 and rgb[0][2] > 2 * max(rgb[0][:2]), colours  # the blue sphere is drawn blue
    assert rgb[1][0] > 150 and rgb[1][0] > 2 * max(rgb[1][1:]), colours  # the red cube red

    # idle: count the animation frames the editor's code asks for over 2 s, and its renders
    page.evaluate("""() => { window.__raf = 0; const raf = window.requestAnimationFrame.bind(window);
        window.requestAnimationFrame = (cb) => {
          if ((new Error().stack || "").includes("box_editor.js")) window.__raf += 1;
          return raf(cb); }; }""")
    renders = page.evaluate(f"{root}.renderCount")
    page.wait_for_timeout(2000)
    assert page.evaluate(f"{root}.renderCount") == renders
    assert page.evaluate("window.__raf") == 0  # the old redraw loop asked ~120 times in 2 s

    # a change draws again: adding a box, then resetting the view
    add_box(page, "a yellow cone")
    page.wait_for_function(f"{root}.renderCount > {renders}", timeout=10_000)
    renders = page.evaluate(f"{root}.renderCount")
    page.locator("#l3d-editor [data-act=view]").click()
    page.wait_for_function(f"{root}.renderCount > {renders}", timeout=10_000)
    assert page.evaluate(f"{root}.boxColour(2)") != colours[0]  # yellow, not the blue of box 1


def test_an_error_leaves_the_scene_and_go_back_asks_first(page):
    open_tab(page)
    set_json(page, {"scene_prompt": SCENE, "boxes": [
        {"prompt": "a red cube", "center": [-0.3, 1.0, 0.35], "size": [0.7, 0.7, 0.7], "yaw_deg": 0}]})
    steps = page.locator("#l3d-steps input[type=number]")
    steps.fill("4")
    steps.press("Enter")
    page.locator("#l3d-generate").click()
    expect(page.locator("#l3d-status")).to_contain_text("Stage 1: insert box 1", timeout=180_000)
    expect(page.locator("#l3d-history img")).to_have_count(2)

    page.locator("#l3d-next").click()  # nothing changed: a bad input
    expect(page.get_by_text("Nothing changed").first).to_be_visible(timeout=60_000)
    # the message is a note on the status line, beside the stage it still describes; no red pill stays
    expect_kept(page, "#l3d-status", "Nothing changed", before="Stage 1: insert box 1",
                outputs=("#l3d-image", "#l3d-history", "#l3d-files", "#l3d-summary", "#l3d-preview"))
    for output in ("#l3d-image", "#l3d-history", "#l3d-files", "#l3d-summary"):
        expect(page.locator(output)).not_to_contain_text("Error")  # no error badge over valid outputs
    expect(page.locator("#l3d-image img")).to_be_visible()
    expect(page.locator("#l3d-history img")).to_have_count(2)
    expect(page.locator('#l3d-files a[download="run.json"]')).to_have_count(1)

    page.locator("#l3d-history img").first.click()  # stage 0, the empty scene
    page.locator("#l3d-back").click()
    expect(page.locator("#l3d-back-question")).to_contain_text("discards the later stage 1.", timeout=30_000)
    expect(page.locator("#l3d-back-confirm")).to_be_visible()  # one element by that id (strict), shown
    page.locator("#l3d-back-no").click()
    expect(page.locator("#l3d-back-question")).to_be_hidden()
    expect(page.locator("#l3d-history img")).to_have_count(2)  # nothing was discarded
    expect(page.locator("#l3d-preview img")).to_be_visible()  # the discarded stage's last step
    page.locator("#l3d-back").click()
    page.locator("#l3d-back-yes").click()
    expect(page.locator("#l3d-history img")).to_have_count(1, timeout=30_000)
    expect(page.locator("#l3d-status")).to_contain_text("Stage 0")
    expect(page.locator("#l3d-preview img")).to_have_count(0)  # nothing on the page is from a discarded stage


def _footprints_apart(a: dict, b: dict) -> bool:
    from backends.layout3d.layout import footprint

    la = Layout.from_json({"scene_prompt": SCENE, "boxes": [a, b]})
    (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = footprint(la.boxes[0]), footprint(la.boxes[1])
    return ax1 <= bx0 or bx1 <= ax0 or ay1 <= by0 or by1 <= ay0


def test_added_boxes_stand_apart_and_unknown_words_are_flagged_as_typed(page):
    open_tab(page)
    page.locator("#l3d-editor .be-prompt").fill("a wooden chair")  # typed, nothing generated
    flag = page.locator("#l3d-editor .be-flag")
    expect(flag).to_contain_text("'chair'", timeout=10_000)
    expect(flag).not_to_contain_text("'wooden'")
    page.locator("#l3d-editor .be-prompt").fill("a red cube")
    expect(flag).to_have_text("", timeout=10_000)

    add_box(page, "a pink torus")  # the default layout has two boxes; the new one goes beside them
    add_box(page, "a cyan cylinder")
    expect(page.locator("#l3d-table")).to_contain_text("a cyan cylinder", timeout=30_000)
    boxes = layout_json(page)["boxes"]
    assert [b["prompt"] for b in boxes][-2:] == ["a pink torus", "a cyan cylinder"]
    for i in range(len(boxes)):
        for j in range(i):
            assert _footprints_apart(boxes[i], boxes[j]), (i, j, boxes)

    # an unknown word in the table is flagged beside the editor, still without generating
    cell = page.locator("#l3d-table").get_by_text("a pink torus").first
    cell.dblclick()
    editor = page.locator("#l3d-table textarea, #l3d-table input").first
    editor.fill("a pink giraffe")
    editor.press("Enter")
    expect(page.locator("#l3d-words")).to_contain_text("'giraffe'", timeout=30_000)
    expect(page.locator("#l3d-status")).not_to_contain_text("Stage")
