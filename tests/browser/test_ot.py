"""The Optimal Transport tab in a real browser: colour transfer of two uploaded photos, a plan between two generated
point clouds, then the solver race and its convergence plot."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.navigation import open_tab

pytestmark = pytest.mark.browser
EXAMPLES = Path(__file__).resolve().parents[2] / "app" / "static" / "examples" / "ot"


def set_number(page, elem_id: str, value) -> None:
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")
    expect(box).to_have_value(str(value))


def test_colour_transfer_of_two_uploads_point_clouds_then_the_convergence_plot(page, tmp_path):
    open_tab(page, "ot")
    page.locator("#ot-source input[type=file]").set_input_files(str(EXAMPLES / "astronaut.jpg"))
    page.locator("#ot-reference input[type=file]").set_input_files(str(EXAMPLES / "coffee.jpg"))
    expect(page.locator("#ot-source img")).to_be_visible()
    expect(page.locator("#ot-reference img")).to_be_visible()
    set_number(page, "ot-colours", 16)
    set_number(page, "ot-max-side", 96)
    expect(page.locator("#ot-colours input[type=number]")).to_have_value("16")  # still set once both are
    page.locator("#ot-colour-run").click()
    status = page.locator("#ot-colour-status")
    expect(status).to_contain_text("Transport cost", timeout=120_000)
    expect(status).to_contain_text("16 × 16 colours")
    expect(page.locator("#ot-colour-result img")).to_be_visible()
    expect(page.locator('#ot-colour-files a[download="plan.npz"]')).to_have_count(1)

    set_number(page, "ot-cloud-n", 60)  # two generated clouds (blobs → moons), exact EMD beside the plan
    page.locator("#ot-cloud-run").click()
    clouds = page.locator("#ot-cloud-status")
    expect(clouds).to_contain_text("gap to EMD", timeout=120_000)
    expect(clouds).to_contain_text("60 × 60 points")
    expect(page.locator("#ot-cloud-plot img, #ot-cloud-plot svg, #ot-cloud-plot canvas").first).to_be_visible()
    expect(page.locator('#ot-cloud-files a[download="plan.npz"]')).to_have_count(1)

    set_number(page, "ot-conv-side", 8)
    set_number(page, "ot-budget", 30)
    set_number(page, "ot-conv-eps", 0.015625)
    page.locator("#ot-conv-run").click()
    conv = page.locator("#ot-conv-status")
    expect(conv).to_contain_text("Exact cost", timeout=120_000)
    expect(page.locator("#ot-plot img, #ot-plot svg, #ot-plot canvas").first).to_be_visible()
    expect(page.locator("#ot-table")).to_contain_text("exact EMD (POT)")
    expect(page.locator("#ot-table")).to_contain_text("MDOT-TNT (this suite)")
    if os.environ.get("OT_TAB_SCREENSHOT"):
        page.screenshot(path=os.environ["OT_TAB_SCREENSHOT"], full_page=True)
