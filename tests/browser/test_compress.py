"""The LLM Compression tab in a real browser: compress at one ratio, read the table, ask both models one prompt."""

import re

import pytest
from playwright.sync_api import expect

from tests.backends.compress.tiny_lm import cache_as_hub, make_tiny_lm, one_thread
from tests.browser.conftest import SCREENSHOTS
from tests.browser.navigation import show_tab

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


def fill(page, elem_id: str, value: str):
    box = page.locator(f"#{elem_id} textarea, #{elem_id} input").first
    box.fill(value)
    box.press("Enter" if elem_id == "cp-model" else "Tab")


def test_compress_read_the_table_and_stream_one_prompt_side_by_side(page, tmp_path, monkeypatch):
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))  # the app runs in this process
    hub_id = cache_as_hub(make_tiny_lm(tmp_path / "tiny-lm"), tmp_path / "hf-cache")
    page.goto(page.url)
    show_tab(page, "compress")
    fill(page, "cp-model", hub_id)
    page.get_by_text("Calibration and evaluation").click()
    page.get_by_text("LoRA heal (the same budget").click()
    for elem_id, value in (("cp-cal-blocks", "2"), ("cp-block", "32"), ("cp-windows", "1"), ("cp-heal-steps", "2")):
        box = page.locator(f"#{elem_id} input[type=number]")
        box.fill(value)
        box.press("Enter")
    ratio = page.locator("#cp-ratio input[type=number]")
    ratio.fill("30")
    ratio.press("Enter")
    page.locator("#cp-run").click()
    expect(page.locator("#cp-status")).to_contain_text("Basis Sharing perplexity", timeout=120_000)
    expect(page.locator("#cp-status")).to_contain_text("ratio 30 %")
    expect(page.locator("#cp-status")).to_contain_text("after a LoRA heal of 2 steps")
    table = page.locator("#cp-table")
    for name in ("Original", "Basis Sharing", "SVD-LLM", "SVD", "perplexity after heal"):
        expect(table).to_contain_text(name)
    expect(page.locator('#cp-files a[download="model.safetensors"]')).to_have_count(1)
    fill(page, "cp-prompt", "def add(a, b):")
    tokens = page.locator("#cp-new-tokens input[type=number]")
    tokens.fill("4")
    tokens.press("Enter")
    page.locator("#cp-ask").click()
    expect(page.locator("#cp-chat-status")).to_contain_text("done", timeout=60_000)
    expect(page.locator("#cp-chat-status")).to_contain_text(re.compile(r"vs Basis Sharing 30 %"))
    left = page.locator("#cp-left textarea").input_value()
    right = page.locator("#cp-right textarea").input_value()
    assert left and right  # both models wrote (a random tiny model writes bytes, not words)
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "compress-tab.png"), full_page=True)  # to look at (not compared)
