"""The Text in Image tab in a real browser: generate a word, edit it to another word and read the new word
with OCR; run Localize and see the per-layer chart."""

import io
import json
import re

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import expect

from backends.textedit.models import PRESETS
from backends.textedit.ocr import matches, read

pytestmark = pytest.mark.browser

OLD, NEW = "cat", "sun"


def open_tab(page):
    page.get_by_role("tab", name="Text in Image").click()
    expect(page.locator("#te-model-info")).to_contain_text("textedit-embedded", timeout=60_000)
    return page


def fill(page, elem_id: str, value: str):
    box = page.locator(f"#{elem_id} textarea, #{elem_id} input").first
    box.fill(value)
    box.press("Tab")


def download(page, files_id: str, name: str) -> bytes:
    href = page.locator(f'#{files_id} a[download="{name}"]').first.get_attribute("href")
    return page.request.get(href).body()


def test_generate_a_word_then_edit_it_and_read_the_new_word(page):
    open_tab(page)
    fill(page, "te-text", OLD)
    page.locator("#te-generate").click()
    expect(page.locator("#te-gen-ocr")).to_contain_text("rapidocr", timeout=120_000)
    expect(page.locator("#te-status")).to_contain_text("textedit-embedded")

    layers = page.locator("#te-layers textarea, #te-layers input").first
    if not layers.input_value():  # no preset layers for this model: localize first, as a user would
        page.get_by_role("tab", name="Localize").click()
        fill(page, "te-loc-new", NEW)
        page.locator("#te-localize").click()
        expect(page.locator("#te-loc-summary")).to_contain_text("Chosen layers", timeout=240_000)
        expect(layers).not_to_have_value("")
    page.get_by_role("tab", name="Edit").click()
    fill(page, "te-edit-new", NEW)
    page.locator("#te-edit").click()
    expect(page.locator("#te-edit-ocr")).to_contain_text("took the K/V", timeout=120_000)
    edited = np.asarray(Image.open(io.BytesIO(download(page, "te-edit-files", "edited.png"))).convert("RGB"))
    original = np.asarray(Image.open(io.BytesIO(download(page, "te-edit-files", "original.png"))).convert("RGB"))
    assert edited.shape == original.shape == (32, 128, 3)
    assert matches(read(edited), NEW), read(edited)  # OCR reads the new word in the edited image
    expect(page.locator("#te-edit-gallery img")).to_have_count(4)


def test_localize_shows_the_per_layer_chart(page):
    open_tab(page)
    fill(page, "te-text", OLD)
    steps = page.locator("#te-steps input[type=number]")
    steps.fill("6")  # the per-head scan runs 2 + 7 + 7 × heads samplings: few steps keep it short
    steps.press("Enter")
    page.get_by_role("tab", name="Localize").click()
    fill(page, "te-loc-new", NEW)
    page.locator("#te-localize").click()
    summary = page.locator("#te-loc-summary")
    expect(summary).to_contain_text("Chosen layers", timeout=240_000)
    expect(summary).to_contain_text(re.compile(r"\d+\.\d+% of the denoiser"))
    expect(page.locator("#te-bars")).to_contain_text("OCR-F1")
    expect(page.locator("#te-bars canvas, #te-bars svg").first).to_be_visible()
    expect(page.locator("#te-layer-table")).to_contain_text("attn2")
    page.locator("#te-layer-table").get_by_text(re.compile(r"^down_blocks\.1\..*attn2$")).first.click()
    expect(page.locator("#te-layer-pick input")).to_have_value(re.compile(r"^1: "))


def _edit(page) -> bytes:
    """Press Edit and return the edited image's PNG bytes once the new result is shown."""
    link = page.locator('#te-edit-files a[download="result.json"]')  # it holds the run's seconds: new each run
    before = link.first.get_attribute("href") if link.count() else None
    page.locator("#te-edit").click()
    expect(page.locator("#te-edit-ocr")).to_contain_text("took the K/V", timeout=300_000)  # generous: a busy CPU
    if before is not None:  # wait for this run's files
        expect(link.first).not_to_have_attribute("href", before, timeout=300_000)
    return download(page, "te-edit-files", "edited.png")


def test_localize_offers_its_layers_and_edit_keeps_the_preset_until_chosen(page):
    open_tab(page)
    fill(page, "te-text", OLD)
    steps = page.locator("#te-steps input[type=number]")
    steps.fill("6")  # every action below samples 6 steps: quicker, and the edit (from step 4) still patches
    steps.press("Enter")
    layers = page.locator("#te-layers textarea, #te-layers input").first
    preset = layers.input_value()
    assert preset  # the embedded model's measured edit layers
    n = len(PRESETS["textedit-embedded"].edit_layers)
    expect(page.locator("#te-layer-set")).to_contain_text(f"the model's preset layers ({n}: ")

    page.get_by_role("tab", name="Edit").click()
    fill(page, "te-edit-new", NEW)
    first = _edit(page)
    expect(page.locator("#te-edit-ocr")).to_contain_text("The model's preset layers")

    page.get_by_role("tab", name="Localize").click()
    fill(page, "te-loc-new", NEW)
    page.locator("#te-loc-heads input").uncheck()  # the layer scan only: quicker
    page.locator("#te-localize").click()
    expect(page.locator("#te-loc-summary")).to_contain_text("Chosen layers", timeout=240_000)
    offered = page.locator("#te-layer-set label", has_text="the last Localize scan's layers")
    expect(offered).to_have_count(1, timeout=30_000)
    expect(offered).to_contain_text(re.compile(r"\d+\.\d+% of the parameters"))
    assert layers.input_value() == preset  # the scan offered its set; it replaced nothing
    expect(page.locator("#te-layer-set input[value=preset]")).to_be_checked()

    page.get_by_role("tab", name="Edit").click()
    second = _edit(page)
    assert second == first  # the same edit as before Localize, through the same preset layers
    expect(page.locator("#te-edit-ocr")).to_contain_text("The model's preset layers")

    chosen = page.locator("#te-loc-layers textarea, #te-loc-layers input").first.input_value()
    offered.click()  # the person chooses the scan's layers: now Edit goes through them
    expect(layers).to_have_value(chosen, timeout=10_000)
    _edit(page)
    expect(page.locator("#te-edit-ocr")).to_contain_text(chosen.split(",")[0].strip())
    if set(chosen.split(", ")) != set(preset.split(", ")):
        expect(page.locator("#te-edit-ocr")).to_contain_text("The chosen layers")


# Types into a number box the moment the page draws it (a MutationObserver in the page): the earliest a person
# could. Gradio draws a tab's contents when it is first opened and, a frame later, wrote their initial values into
# them again, so a value typed that early went back to the default (the range stayed at 40); the tab keeps it now.
TYPE_ON_SIGHT = """([id, value]) => {
    const put = () => {
        const box = document.querySelector(`#${id} input[type=number]`);
        if (!box) return false;
        box.value = value;
        box.dispatchEvent(new Event("input", {bubbles: true}));
        return true;
    };
    if (put()) throw new Error(`#${id} is drawn already: open its tab after this`);
    const seen = new MutationObserver(() => { if (put()) seen.disconnect(); });
    seen.observe(document.body, {childList: true, subtree: true});
}"""


def test_batch_and_held_out_sliders_can_be_set_and_reach_the_run(page):
    open_tab(page)
    steps = page.locator("#te-steps input[type=number]")
    steps.fill("4")
    steps.press("Enter")
    page.evaluate(TYPE_ON_SIGHT, ["te-ft-steps", "1"])  # typed as soon as the Fine-tune tab draws it
    page.get_by_role("tab", name="Fine-tune").click()
    batch = page.locator("#te-ft-batch input[type=number]")
    batch.fill("3")  # typed once, right after the tab opened
    batch.press("Enter")
    expect(page.locator("#te-ft-batch input[type=range]")).to_have_value("3")
    held_out = page.locator("#te-ft-words input[type=range]")
    held_out.focus()
    for _ in range(10):  # by keyboard on the slider itself: 12 → 2
        held_out.press("ArrowLeft")
    expect(page.locator("#te-ft-words input[type=number]")).to_have_value("2")
    expect(page.locator("#te-ft-steps input[type=range]")).to_have_value("1")  # still what was typed at once
    page.locator("#te-finetune").click()
    expect(page.locator("#te-ft-md")).to_contain_text("trainable parameters", timeout=180_000)
    card = json.loads(download(page, "te-ft-files", "run.json"))
    assert card["request"]["batch_size"] == 3 and card["request"]["eval_words"] == 2, card["request"]
    assert card["request"]["train_steps"] == 1 and card["request"]["num_inference_steps"] == 4


def test_a_word_too_long_keeps_the_image_and_says_why(page):
    from tests.browser.kept import expect_kept

    open_tab(page)
    fill(page, "te-text", OLD)
    page.locator("#te-generate").click()
    expect(page.locator("#te-status")).to_contain_text(f"Generated “{OLD}”", timeout=120_000)
    shown = page.locator("#te-image img").get_attribute("src")
    ocr = page.locator("#te-gen-ocr").inner_text()

    fill(page, "te-text", "abcdefghijkl")  # 12 letters: the model writes at most 8
    page.locator("#te-generate").click()
    expect_kept(page, "#te-status", "at most 8", outputs=("#te-image", "#te-preview", "#te-gen-ocr"),
                before=f"Generated “{OLD}”")
    assert page.locator("#te-image img").get_attribute("src") == shown  # the image is still the one made
    assert page.locator("#te-gen-ocr").inner_text() == ocr  # and its OCR line with it
