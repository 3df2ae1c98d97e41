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


# Types into the first number box of a tab the moment the page draws it (a MutationObserver): the earliest a person
# could. Gradio draws a tab's contents when it is first opened and, a frame later, wrote their initial values into
# them again, so a value typed that early went back to its default; app.components.typed_values keeps it.
TYPE_ON_SIGHT = """(name) => {
    const put = () => {
        const box = document.querySelector(`#tab-${name} input[type=number]`);
        if (!box || box.offsetParent === null) return false;
        const low = box.min === "" ? 0 : Number(box.min), high = box.max === "" ? low + 10 : Number(box.max);
        const value = Number(box.value) === high ? low : high;
        box.value = String(value);
        box.dispatchEvent(new Event("input", {bubbles: true}));
        box.dataset.typedOnSight = "yes";
        window.__typed = String(value);
        return true;
    };
    window.__typed = null;
    const seen = new MutationObserver(() => { if (put()) seen.disconnect(); });
    seen.observe(document.body, {childList: true, subtree: true, attributes: true});
}"""


@pytest.mark.parametrize("name", ["counterfactual"])  # its Samples slider went back to 2 without the fix
def test_a_value_typed_as_a_tab_first_opens_stays_typed(page, name):
    from playwright.sync_api import expect

    expect(page.locator("#app-device")).to_contain_text("Device:", timeout=60_000)  # its load handlers ran
    page.evaluate(TYPE_ON_SIGHT, name)
    show_tab(page, name)
    page.wait_for_function("window.__typed !== null")
    typed = page.evaluate("window.__typed")
    page.wait_for_timeout(1500)  # past the moment the page wrote the drawn controls' initial values again
    box = page.locator(f"#tab-{name} input[data-typed-on-sight]")  # the box the page script typed into
    assert box.input_value() == typed
