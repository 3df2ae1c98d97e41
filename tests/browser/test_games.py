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


# what the status asks for → the control that must appear for it
CONTROL_FOR = {"to speak": "#avalon-say", "pick a team": "#avalon-propose", "Vote on": "#avalon-approve",
               "play a card": "#avalon-success"}


@pytest.mark.parametrize("agents", ["search over beliefs", "STRATEGIST strategy"])
def test_play_avalon_as_a_loyal_servant_through_chat_and_buttons(page, agents):
    page.get_by_role("tab", name="Strategy Games").click()
    page.get_by_role("tab", name="Avalon").click()
    page.locator("#avalon-agents").get_by_label(agents, exact=True).check()
    page.locator("#avalon-new").click()
    status = page.locator("#avalon-status")
    expect(page.locator("#avalon-info")).to_contain_text("Loyal Servant", timeout=30_000)
    if agents == "STRATEGIST strategy":  # the info line names the strategy the agents play
        expect(page.locator("#avalon-info")).to_contain_text("agents' strategy: s0")
    expect(page.locator("#avalon-chat")).to_contain_text("You are Player")
    said = 0
    log_link = page.locator('#avalon-log a[download="avalon_game.json"]')
    for _ in range(80):
        expect(status).not_to_be_empty(timeout=30_000)
        text = status.inner_text()
        before = log_link.get_attribute("href")
        if "Game over" in text:
            break
        control = next((c for word, c in CONTROL_FOR.items() if word in text), None)
        assert control, f"no control for: {text}"
        expect(page.locator(control)).to_be_visible(timeout=30_000)  # the status may render before the button
        if page.locator("#avalon-say").is_visible():
            said += 1
            box = page.locator("#avalon-say-text textarea")
            for _ in range(5):  # the box may re-render as it appears: type until the text stays
                box.fill(f"I am loyal to Arthur ({said}).")
                page.wait_for_timeout(300)
                if box.input_value() == f"I am loyal to Arthur ({said}).":
                    break
            expect(box).to_have_value(f"I am loyal to Arthur ({said}).")
            page.locator("#avalon-say").click()
            expect(page.locator("#avalon-chat")).to_contain_text(f"I am loyal to Arthur ({said}).", timeout=30_000)
        elif page.locator("#avalon-propose").is_visible():
            size = int(re.search(r"Team size (\d+)", text).group(1))
            boxes = page.locator("#avalon-team input[type=checkbox]")
            for i in range(size):
                boxes.nth(i).check()
            page.locator("#avalon-propose").click()
        elif page.locator("#avalon-approve").is_visible():
            page.locator("#avalon-approve").click()
        elif page.locator("#avalon-success").is_visible():
            expect(page.locator("#avalon-fail")).to_be_disabled()  # a Loyal Servant cannot fail a quest
            page.locator("#avalon-success").click()
        else:
            raise AssertionError(f"no control for: {text}")
        # every action writes a fresh log: wait until the page shows the new one
        expect(log_link).not_to_have_attribute("href", before, timeout=30_000)
    expect(status).to_contain_text("Game over", timeout=30_000)
    expect(page.locator("#avalon-chat")).to_contain_text("wins")
    assert said >= 1
    expect(page.locator('#avalon-log a[download="avalon_game.json"]')).to_have_count(1)
