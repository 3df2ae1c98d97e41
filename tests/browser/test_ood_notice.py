"""A real photo in Counterfactual and in Video Depth: the page says the embedded model only knows its synthetic
world, names the real model and the command that gets it — and the run still goes ahead."""

from pathlib import Path

import pytest
import skimage
from playwright.sync_api import expect

from tests.browser.navigation import show_tab

pytestmark = pytest.mark.browser
PHOTO = Path(skimage.__file__).parent / "data" / "astronaut.png"


def test_a_photo_in_counterfactual_shows_the_notice(page):
    page.get_by_role("tab", name="Counterfactual").click()
    page.locator("#cf-upload input[type=file]").set_input_files(str(PHOTO))
    info = page.locator("#cf-model")
    expect(info).to_contain_text("only knows 32×32 renders", timeout=60_000)
    expect(info).to_contain_text("iclr25-studio models download i2sb-imagenet-freeform resnet50-imagenet")
    expect(page.locator("#cf-prediction")).not_to_be_empty()  # it still classifies


def test_a_photo_in_video_depth_shows_the_notice_after_the_run(page):
    show_tab(page, "videodepth")
    page.locator("#vd-input input[type=file]").set_input_files(str(PHOTO))
    expect(page.locator("#vd-estimate")).to_contain_text("1 frame(s)", timeout=120_000)
    page.locator("#vd-run").click()
    status = page.locator("#vd-status")
    expect(status).to_contain_text("Done: 1 frame(s)", timeout=240_000)  # the run went ahead
    expect(status).to_contain_text("only knows 64-pixel renders")
    expect(status).to_contain_text("iclr25-studio models download depth-any-video")
