"""The tabs are grouped by field, and a link with ``?tab=<name>`` opens that tab directly."""

from __future__ import annotations

import pytest

from tests.browser.navigation import open_tab, show_tab

pytestmark = pytest.mark.browser


def test_the_top_level_shows_the_groups_and_system(page):
    from app.tabs import all_tabs, grouped

    groups = [g for g, _ in grouped(all_tabs())]
    shown = page.locator("#groups").get_by_role("tab")
    shown.first.wait_for()
    names = [t.strip() for t in shown.all_inner_texts()]
    top = [n for n in names if n in (*groups, "System")]  # the nested tabs of the open group are listed too
    assert top == [*groups, "System"]
    assert page.locator("#tab-layout3d").is_visible()  # the first group's first tab is open


@pytest.mark.parametrize("name", ["videodepth", "games", "counterfactual", "system"])
def test_a_deep_link_opens_its_tab_in_its_group(page, name):
    open_tab(page, name)
    assert page.locator(f"#tab-{name}").first.is_visible()
    if name != "counterfactual":  # another group (or System) is open: the first group's tabs are hidden
        assert not page.locator("#tab-layout3d").is_visible()


def test_clicking_a_group_then_its_tab_shows_that_tab(page):
    show_tab(page, "games")
    assert not page.locator("#tab-videodepth").is_visible()
    show_tab(page, "videodepth")
    assert not page.locator("#tab-games").is_visible()
    show_tab(page, "textedit")
    assert page.locator("#tab-textedit").is_visible()
