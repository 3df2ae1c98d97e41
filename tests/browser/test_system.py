"""The System tab in a real browser: what a person sees and clicks."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.navigation import show_tab

pytestmark = pytest.mark.browser


def open_system_tab(page):
    show_tab(page, "system")
    return page


def test_system_tab_shows_device_and_model_table(page):
    open_system_tab(page)
    device = page.locator("#system-device")
    expect(device).to_contain_text("Device in use", timeout=60_000)
    expect(device).to_contain_text(re.compile(r"`?(cpu|cuda|mps)"))
    models = page.locator("#system-models")
    expect(models).to_contain_text("sd15")
    expect(models).to_contain_text("missing")
    expect(models).to_contain_text("looked in")
    expect(page.locator("#system-versions")).to_contain_text("gradio")


def test_speed_test_runs_and_stop_stops_it(page):
    open_system_tab(page)
    page.get_by_text("Measure device speed").click()
    page.locator("#speed-run").click()
    result = page.locator("#speed-result")
    expect(result).to_contain_text("GFLOP/s", timeout=60_000)
    # a Stop after the run ended keeps its result on screen and says, in a toast, that nothing runs
    page.locator("#speed-stop").click()
    expect(page.get_by_text("Nothing is running.")).to_be_visible(timeout=10_000)
    expect(result).to_contain_text("GFLOP/s")

    # a long run, then Stop: the result says it stopped, well before it could have finished
    for field, value in (("#speed-size", "2048"), ("#speed-repeats", "200")):  # each committed (Enter), checked:
        box = page.locator(f"{field} input[type=number]")  # a run with the old 512 / 10 ends before any Stop
        box.fill(value)
        box.press("Enter")
        expect(box).to_have_value(value)
    page.locator("#speed-size input[type=range]").evaluate("e => e.blur()")
    page.locator("#speed-run").click()
    expect(result).to_contain_text("Running", timeout=30_000)
    # one press: the run is cancellable from its click on, and the button answers in a toast, so nothing can
    # write over the run's own "Stopped" (200 repeats of 2048² would take minutes here)
    page.locator("#speed-stop").click()
    expect(page.get_by_text("Stopping…")).to_be_visible(timeout=30_000)
    expect(result).to_contain_text("Stopped by the user", timeout=60_000)
    expect(result).not_to_contain_text("GFLOP/s")


def test_header_shows_the_device_in_use_on_every_tab(page):
    expect(page.locator("#app-device")).to_contain_text(re.compile(r"Device: (cpu|cuda|mps)"), timeout=60_000)



def test_download_beside_a_missing_model_shows_licence_progress_and_then_it_is_present(hub, page):
    from backends.common.registry import default_registry
    from tests.hubserver import published

    spec = default_registry().get("controlnet-sd15-depth")
    hub.repos[spec.location] = published(spec)
    gated = default_registry().get("sd3-medium")
    hub.repos[gated.location] = published(gated, weight_bytes=64)
    hub.repos[gated.location].gated = True
    open_system_tab(page)
    status = page.locator("#download-status")

    page.locator("#download-sd3-medium").click()  # gated: what to do, in the page
    expect(status).to_contain_text("Cannot download 'sd3-medium'", timeout=60_000)
    expect(status).to_contain_text("hf auth login")

    button = page.locator("#download-controlnet-sd15-depth")
    expect(button).to_be_visible(timeout=60_000)
    button.click()
    expect(status).to_contain_text("controlnet-sd15-depth is ready", timeout=60_000)
    expect(status).to_contain_text("Licence of controlnet-sd15-depth: OpenRAIL")
    expect(button).to_have_count(0, timeout=30_000)  # present now: its row is gone
    expect(page.locator("#download-sd3-medium")).to_be_visible()


def test_download_beside_a_tabs_model_choice_fetches_what_the_choice_needs(hub, page):
    from backends.common.registry import default_registry
    from backends.common.settings import get_settings
    from tests.hubserver import published

    spec = default_registry().get("depth-any-video")
    repo = hub.repos[spec.location] = published(spec, weight_bytes=2048)
    folder = get_settings().models_dir / spec.location
    for name in spec.files:  # only the configs are here: that is not the model
        if name.endswith(".json"):
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(repo.files[name])
    show_tab(page, "videodepth")
    row = page.locator("#vd-download-row")
    expect(row).to_be_hidden()  # the embedded default is present
    page.locator("#vd-model input").click()
    page.get_by_role("option", name=re.compile(r"^depth-any-video")).click()
    expect(row).to_be_visible(timeout=30_000)
    expect(page.locator("#vd-download-what")).to_contain_text("needs depth-any-video")
    page.locator("#vd-download").click()
    expect(page.locator("#vd-download-status")).to_contain_text("depth-any-video is ready", timeout=60_000)
    expect(row).to_be_hidden(timeout=30_000)
    fetched = {p.rsplit("/", 1)[-1] for m, p, _ in hub.log if m == "GET" and "/resolve/" in p}
    assert fetched == {"diffusion_pytorch_model.safetensors"}  # the configs already here were kept
