"""The Strategy Games tab in a real browser: a person plays a whole GOPS game by clicking cards."""

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_play_a_full_gops_game_by_clicking(page):
    page.get_by_role("tab", name="Strategy Games").click()
    cards = page.locator("#gops-hand")
    n = 5
    slider = page.locator("#gops-cards input[type=number]")
    slider.fill(str(n))
    slider.press("Enter")
    page.locator("#gops-new").click()
    board = page.locator("#gops-board")
    expect(board).to_contain_text("Prize:", timeout=30_000)
    for round_ in range(1, n + 1):
        expect(board).to_contain_text(f"round {round_}/{n}", timeout=30_000)
        enabled = cards.locator("button:not([disabled])")
        expect(enabled).to_have_count(n - round_ + 1, timeout=30_000)
        enabled.first.click()
        expect(page.locator("#gops-history")).to_contain_text(str(round_), timeout=30_000)
    expect(board).to_contain_text(re.compile(r"(You win|The agent wins|Draw)"), timeout=30_000)
    expect(cards.locator("button:not([disabled])")).to_have_count(0)
    expect(page.locator("#gops-stats")).to_contain_text("visits")
    expect(page.locator('#gops-log a[download="gops_game.json"]')).to_have_count(1)
