"""The CI Test tab in a real browser: pick a graph, test the statement its middle variable should block, then
discover the graph with PC and read SHD / edge F1 per test and the downloaded graphs; a cyclic custom graph is
refused and the tab keeps working (one page load for both: the budget)."""

import json
import re

import pytest
from playwright.sync_api import expect

from tests.browser.navigation import show_tab

pytestmark = pytest.mark.browser


def set_number(page, elem_id: str, value: str) -> None:
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(value)
    box.press("Enter")


def download(page, name: str) -> bytes:
    href = page.locator(f'#ci-files a[download="{name}"]').first.get_attribute("href")
    return page.request.get(href).body()


def test_pick_a_graph_test_it_and_discover_it(page):
    show_tab(page, "citest")
    page.locator("#ci-graph").get_by_label("chain", exact=True).check()
    set_number(page, "ci-nodes", "4")
    set_number(page, "ci-n", "1500")
    expect(page.locator("#ci-dag img")).to_be_visible(timeout=30_000)  # the true DAG is drawn

    page.locator("#ci-test").click()
    status = page.locator("#ci-status")
    expect(status).to_contain_text("truth: independent", timeout=60_000)
    expect(status).to_contain_text(re.compile(r"DCT p = [\d.e-]+ \(keeps\) ✓"))
    expect(status).to_contain_text(re.compile(r"Fisher-z p = [\d.e-]+ \(rejects\) ✗"))

    page.get_by_role("tab", name="Discover", exact=True).click()
    page.locator("#ci-discover").click()
    expect(status).to_contain_text("PC done on 4 variables", timeout=90_000)
    expect(page.locator("#ci-graphs img")).to_be_visible()
    expect(page.locator("#ci-scores")).to_contain_text("DCT")
    graphs = json.loads(download(page, "graphs.json"))
    assert graphs["truth"]["dag"] == [["X1", "X2"], ["X2", "X3"], ["X3", "X4"]]
    assert graphs["scores"]["dct"]["shd"] <= graphs["scores"]["fisherz"]["shd"]
    assert b"<graphml" in download(page, "graph_dct.graphml")

    # a cyclic custom graph is refused with a message; the corrected one runs in the same session
    page.get_by_role("tab", name="Test", exact=True).click()
    page.locator("#ci-graph").get_by_label("custom", exact=True).check()
    edges = page.locator("#ci-edges textarea")
    edges.fill("A->B, B->C, C->A")
    page.locator("#ci-test").click()
    expect(page.get_by_text("Those edges make a cycle").first).to_be_visible(timeout=30_000)
    edges.fill("A->B, C->B")
    page.locator("#ci-x textarea").fill("A")
    page.locator("#ci-y textarea").fill("C")
    page.locator("#ci-given textarea").fill("")
    page.locator("#ci-test").click()
    expect(page.locator("#ci-status")).to_contain_text("A ⊥ C", timeout=60_000)
    expect(page.locator("#ci-status")).to_contain_text("truth: independent")
