"""The Unlearning tab in a real browser: choose the class to forget, load the shipped generators, see the
side-by-side grid with the classifier's readings."""

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def choose(page, elem_id: str, name: str):
    """Type a class or word into the Forget / Map it to box (text boxes: the text teacher takes words)."""
    box = page.locator(f"#{elem_id} textarea, #{elem_id} input").first
    box.fill(name)
    box.press("Tab")
    expect(box).to_have_value(name)


def test_choose_a_class_load_shipped_generators_and_see_the_grid(page):
    page.get_by_role("tab", name="Unlearning").click()
    choose(page, "ul-forget", "cone")
    choose(page, "ul-safe", "cylinder")
    per_class = page.locator("#ul-per-class input[type=number]")
    per_class.fill("2")
    per_class.press("Enter")
    page.locator("#ul-load").click()
    expect(page.locator("#ul-status")).to_contain_text(re.compile(r"Forgetting \*?\*?cone"), timeout=120_000)
    gallery = page.locator("#ul-gallery")
    expect(gallery.locator("img")).to_have_count(5, timeout=30_000)
    expect(gallery).to_contain_text("asked for: cone — forgotten")
    expect(page.locator("#ul-files")).to_contain_text("panel_cone")


def test_forgetting_a_class_onto_itself_shows_a_clear_error(page):
    page.get_by_role("tab", name="Unlearning").click()
    choose(page, "ul-forget", "sphere")
    choose(page, "ul-safe", "sphere")
    page.locator("#ul-load").click()
    expect(page.locator("#ul-status")).to_contain_text("onto itself", timeout=60_000)
    expect(page.get_by_role("tab", name="Unlearning")).to_be_visible()


def test_the_text_teacher_flags_an_unknown_word_as_it_is_typed(page):
    """Teacher: text fills in a colour pair and prompts; a word the 3D Layout model does not know is flagged by name
    before any run, and so is a colour mapped onto a shape."""
    page.get_by_role("tab", name="Unlearning").click()
    page.locator("#ul-teacher").get_by_text("text", exact=True).click()
    expect(page.locator("#ul-forget textarea, #ul-forget input").first).to_have_value("red")
    expect(page.locator("#ul-prompts textarea").first).to_have_value(re.compile("a red cube"))
    choose(page, "ul-forget", "crimson")
    expect(page.locator("#ul-word-check")).to_contain_text("'crimson'", timeout=20_000)
    choose(page, "ul-forget", "red")
    choose(page, "ul-safe", "cube")
    expect(page.locator("#ul-word-check")).to_contain_text("colour onto a colour", timeout=20_000)
