"""The Unlearning tab in a real browser: choose the class to forget, load the shipped generators, see the
side-by-side grid with the classifier's readings."""

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def choose(page, elem_id: str, name: str):
    box = page.locator(f"#{elem_id} input")
    box.click()
    option = page.locator(f'#{elem_id} li[role=option][aria-label="{name}"]')
    if option.count() == 0:  # the list is not inside the component: the one just opened is the last
        option = page.locator(f'li[role=option][aria-label="{name}"]:visible').last
    option.first.click()
    expect(box).to_have_value(name)
    box.press("Escape")


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
