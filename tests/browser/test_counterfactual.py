"""The Counterfactual tab in a real browser: pick an example, paint a region, pick a target, generate."""

import io
import json
import re

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def open_tab(page):
    page.get_by_role("tab", name="Counterfactual").click()
    return page


def load_example(page, name: str):
    page.locator("#tab-counterfactual").get_by_role("button").filter(has=page.locator(f"img[src*='{name}']")).first.click()
    expect(page.locator("#cf-prediction")).to_contain_text(name, timeout=60_000)


def paint_centre(page, half_w=70, half_h=55):
    editor = page.locator("#cf-editor")
    editor.get_by_role("button", name="Brush", exact=True).click()
    box = editor.locator("canvas").first.bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    for dy in range(-half_h, half_h + 1, 14):  # zig-zag strokes over the middle of the image
        page.mouse.move(cx - half_w, cy + dy)
        page.mouse.down()
        page.mouse.move(cx + half_w, cy + dy, steps=8)
        page.mouse.up()


def choose_target(page, name: str):
    box = page.locator("#cf-target input")
    box.click()  # opens the list of classes
    page.get_by_role("option", name=name, exact=True).click()
    expect(box).to_have_value(name)


def download(page, name: str) -> bytes:
    href = page.locator(f'#cf-files a[download="{name}"]').first.get_attribute("href")
    return page.request.get(href).body()


def test_draw_region_generate_and_flip_with_outside_unchanged(page):
    open_tab(page)
    load_example(page, "cube")
    paint_centre(page)
    choose_target(page, "cone")
    steps = page.locator("#cf-steps input[type=number]")
    steps.fill("50")
    steps.press("Enter")
    page.locator("#cf-run").click()
    status = page.locator("#cf-status")
    expect(status).to_contain_text(re.compile(r"\d/\d flipped"), timeout=180_000)
    expect(status).to_contain_text("max change outside the region: 0")

    run = json.loads(download(page, "run.json"))["result"]  # the one run-card format: the result under "result"
    assert run["target"] == "cone" and run["original_prediction"] == "cube"
    assert any(s["flipped"] for s in run["samples"]), run["samples"]
    original = np.asarray(Image.open(io.BytesIO(download(page, "original.png"))).convert("RGB"))
    mask = np.asarray(Image.open(io.BytesIO(download(page, "mask.png")))) > 0
    flipped = next(i for i, s in enumerate(run["samples"]) if s["flipped"])
    cf = np.asarray(Image.open(io.BytesIO(download(page, f"counterfactual_{flipped + 1}.png"))).convert("RGB"))
    assert 0.05 < mask.mean() < 0.9
    assert np.array_equal(cf[~mask], original[~mask])  # bit for bit outside the painted region
    assert not np.array_equal(cf[mask], original[mask])
    expect(page.locator("#cf-gallery")).to_contain_text("flipped")


def test_generate_without_a_region_shows_a_clear_error_and_keeps_the_session(page):
    open_tab(page)
    load_example(page, "cone")
    page.locator("#cf-run").click()
    expect(page.get_by_text("Paint the region that may change first").first).to_be_visible(timeout=30_000)
    expect(page.locator("#cf-prediction")).to_contain_text("cone")  # state intact


def test_an_unreadable_upload_shows_one_clear_message_and_the_tab_keeps_working(page, tmp_path):
    open_tab(page)
    load_example(page, "cone")
    fake = tmp_path / "holiday.png"
    fake.write_text("not really a picture\n" * 50)
    page.locator("#cf-upload input[type=file]").set_input_files(str(fake))
    expect(page.get_by_text("not an image this suite can read").first).to_be_visible(timeout=30_000)
    for output in ("#cf-editor", "#cf-prediction"):
        expect(page.locator(output)).not_to_contain_text("Error")  # no badge over the earlier outputs
    expect(page.locator("#cf-prediction")).to_contain_text("cone")  # the earlier prediction is kept
    expect(page.locator("#cf-editor .wrap.generating, #cf-editor .eta-bar")).to_have_count(0)  # not spinning
    load_example(page, "torus")  # and the tab still works


def test_a_refused_upload_after_a_run_keeps_the_image_its_prediction_and_the_run(page, tmp_path):
    from tests.browser.kept import expect_kept

    open_tab(page)
    load_example(page, "cube")
    paint_centre(page)
    steps = page.locator("#cf-steps input[type=number]")
    steps.fill("4")  # a quick run
    steps.press("Enter")
    page.locator("#cf-run").click()
    status = page.locator("#cf-status")
    expect(status).to_contain_text(re.compile(r"\d/\d flipped"), timeout=180_000)
    shown = page.locator("#cf-upload img").get_attribute("src")

    fake = tmp_path / "holiday.png"
    fake.write_text("not really a picture\n" * 50)
    page.locator("#cf-upload input[type=file]").set_input_files(str(fake))
    expect_kept(page, "#cf-model", "not an image this suite can read", before="Models: bridge",
                outputs=("#cf-editor", "#cf-prediction", "#cf-gallery", "#cf-upload"))
    said = page.locator("[data-testid=toast-text]").filter(has_text="not an image this suite can read")
    expect(said).to_have_count(1)  # said once (the upload's change event fired twice: the toast grouped two)
    expect(page.locator("#cf-upload img")).to_have_attribute("src", shown)  # the image in use, not the refused one
    expect(page.locator("#cf-prediction")).to_contain_text("cube")
    expect(status).to_contain_text(re.compile(r"\d/\d flipped"))  # the run is still shown
    expect(page.locator("#cf-gallery")).to_contain_text("flipped")
