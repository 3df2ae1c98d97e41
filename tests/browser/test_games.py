"""The Strategy Games tab in a real browser: a person plays whole GOPS and Avalon games by clicking,
and what the page offers for download while a game runs is only that person's view."""

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.navigation import show_tab

pytestmark = pytest.mark.browser

HIDDEN_ROLES = ("Merlin", "Assassin", "Minion")


def _download(page, link) -> tuple[str, str]:
    """Click a download link as a person would; (file name, text)."""
    with page.expect_download() as info:
        link.click()
    download = info.value
    return download.suggested_filename, Path(download.path()).read_text()


def _fetch(page, link) -> str:
    return page.request.get(link.get_attribute("href")).text()


def test_play_a_full_gops_game_by_clicking(page):
    show_tab(page, "games")
    cards = page.locator("#gops-hand")
    n = 5
    slider = page.locator("#gops-cards input[type=number]")
    slider.fill(str(n))
    slider.press("Enter")
    page.locator("#gops-new").click()
    board = page.locator("#gops-board")
    expect(board).to_contain_text("Prize:", timeout=30_000)
    view = page.locator('#gops-log a[download="gops_your_view.json"]')
    for round_ in range(1, n + 1):
        expect(board).to_contain_text(f"round {round_}/{n}", timeout=30_000)
        enabled = cards.locator("button:not([disabled])")
        expect(enabled).to_have_count(n - round_ + 1, timeout=30_000)
        enabled.first.click()
        expect(page.locator("#gops-history")).to_contain_text(str(round_), timeout=30_000)
        if round_ == 2:  # mid-game, the offered log is the player's view: the prizes turned up so far only
            expect(view).to_have_count(1, timeout=30_000)
            name, text = _download(page, view)
            data = json.loads(text)
            assert name == "gops_your_view.json" and len(data["prizes_revealed"]) == 3
            assert not {"seed", "prizes", "request"} & set(data)
            expect(board).not_to_contain_text("Seed")
    expect(board).to_contain_text(re.compile(r"(You win|The agent wins|Draw)"), timeout=30_000)
    expect(cards.locator("button:not([disabled])")).to_have_count(0)
    expect(page.locator("#gops-stats")).to_contain_text("visits")
    full = page.locator('#gops-log a[download="gops_game.json"]')
    expect(full).to_have_count(1)
    data = json.loads(_fetch(page, full))  # once over: the whole deck and the seed, which the board tells too
    assert len(data["game"]["prizes"]) == n
    expect(board).to_contain_text(f"Seed {data['request']['seed']}")


# what the status asks for → the control that must appear for it
CONTROL_FOR = {"to speak": "#avalon-say", "pick a team": "#avalon-propose", "Vote on": "#avalon-approve",
               "play a card": "#avalon-success"}


@pytest.mark.parametrize("agents", ["search over beliefs", "STRATEGIST strategy"])
def test_play_avalon_as_a_loyal_servant_through_chat_and_buttons(page, agents):
    show_tab(page, "games")
    page.get_by_role("tab", name="Avalon").click()
    page.locator("#avalon-agents").get_by_label(agents, exact=True).check()
    page.locator("#avalon-new").click()
    status = page.locator("#avalon-status")
    expect(page.locator("#avalon-info")).to_contain_text("Loyal Servant", timeout=30_000)
    if agents == "STRATEGIST strategy":  # the info line names the strategy the agents play
        expect(page.locator("#avalon-info")).to_contain_text("agents' strategy: s0")
    expect(page.locator("#avalon-chat")).to_contain_text("You are Player")
    said = 0
    log_link = page.locator("#avalon-log a[download]")
    me = int(re.search(r"Player (\d+)", page.locator("#avalon-info").inner_text()).group(1))
    for move in range(80):
        expect(status).not_to_be_empty(timeout=30_000)
        text = status.inner_text()
        before = log_link.get_attribute("href")
        if "Game over" in text:
            break
        _assert_only_my_information(page, me, downloaded=move == 2)
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
    full = page.locator('#avalon-log a[download="avalon_game.json"]')
    expect(full).to_have_count(1)
    data = json.loads(_fetch(page, full))  # once over: every role, the reasoning and the seed
    assert json.loads(data["log"].splitlines()[0])["roles"][me] == "Servant"
    expect(status).to_contain_text(f"Seed {data['seed']}")


def _assert_only_my_information(page, me: int, downloaded: bool) -> None:
    """While the game runs, neither the page nor the offered log holds another seat's role, a quest card
    of another seat, the agents' reasoning or the seed."""
    page_text = " ".join(page.locator(sel).inner_text() for sel in ("#avalon-chat", "#avalon-status", "#avalon-info"))
    page_text = re.sub(r"roles in play: [A-Za-z, ]+\.", "", page_text)  # the public list of roles in play
    assert not [r for r in HIDDEN_ROLES if r in page_text], page_text
    assert "private reasoning" not in page_text and "Seed" not in page_text
    link = page.locator('#avalon-log a[download="avalon_your_view.json"]')
    expect(link).to_have_count(1)
    name, text = _download(page, link) if downloaded else ("avalon_your_view.json", _fetch(page, link))
    assert name == "avalon_your_view.json"
    data = json.loads(text)
    assert not {"seed", "log", "reasoning", "roles"} & set(data)
    for e in data["events"]:
        assert e.get("player", me) == me or e["type"] not in ("role", "quest_card"), e
        e = {k: v for k, v in e.items() if k != "roles_in_game"}
        assert not [r for r in HIDDEN_ROLES if r in json.dumps(e)], e
