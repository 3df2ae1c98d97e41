"""The Text in Image tab in a real browser: generate a word, edit it to another word and read the new word
with OCR; run Localize and see the per-layer chart."""

import io
import re

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import expect

from app.tabs import all_tabs
from backends.textedit.ocr import matches, read

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif("textedit" not in [t.name for t in all_tabs()],
                                 reason="the Text in Image tab is shown once the embedded model writes legibly")]

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
