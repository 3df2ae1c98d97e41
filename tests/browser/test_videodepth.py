"""The Video Depth tab in a real browser: upload a short clip, read the estimate, get a playable depth video,
open the point cloud, download the 16-bit frames."""

import io
import re
import zipfile

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import expect

from tests.browser.navigation import show_tab

pytestmark = pytest.mark.browser


def test_upload_estimate_run_play_point_cloud_and_16bit_frames(page):
    from backends.videodepth.examples import example_clip

    clip = example_clip("room A · 48 frames")  # a real H.264 file, as a person would upload
    show_tab(page, "videodepth")
    page.locator("#vd-input input[type=file]").set_input_files(str(clip))
    estimate = page.locator("#vd-estimate")
    expect(estimate).to_contain_text(re.compile(r"48 frame\(s\).*estimated \d+ s and ≈\d+ MB"), timeout=120_000)

    page.locator("#vd-run").click()
    status = page.locator("#vd-status")
    expect(status).to_contain_text("Done: 48 frame(s) at 64×64", timeout=240_000)
    expect(status).to_contain_text("Flicker")
    video = page.locator("#vd-video video")
    expect(video).to_have_count(1, timeout=30_000)
    page.wait_for_function("""() => { const v = document.querySelector('#vd-video video');
        return v && v.readyState >= 2 && v.videoWidth === 128 && v.videoHeight === 64; }""", timeout=30_000)
    played = page.evaluate("""async () => { const v = document.querySelector('#vd-video video');
        v.muted = true; await v.play(); await new Promise(r => setTimeout(r, 600)); v.pause(); return v.currentTime; }""")
    assert played > 0.1  # H.264 decodes and plays in the browser

    page.locator("#vd-cloud").click()
    expect(page.locator("#vd-viewer .pc-status")).to_contain_text("frame 0: 4096 points", timeout=60_000)
    expect(page.locator("#vd-viewer canvas")).to_have_count(1)
    expect(page.locator('#vd-files a[download$=".ply"]')).to_have_count(1, timeout=30_000)

    href = page.locator('#vd-files a[download="depth_png16.zip"]').first.get_attribute("href")
    with zipfile.ZipFile(io.BytesIO(page.request.get(href).body())) as z:
        names = sorted(z.namelist())
        png = np.asarray(Image.open(io.BytesIO(z.read(names[10]))))
    assert len(names) == 48 and png.dtype == np.uint16 and png.shape == (64, 64) and png.max() > png.min()


def test_a_corrupt_upload_is_a_clear_message_and_the_page_keeps_working(page, tmp_path):
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"\x00" * 800)
    show_tab(page, "videodepth")
    page.locator("#vd-input input[type=file]").set_input_files(str(bad))
    expect(page.get_by_text("is not a video this suite can read").first).to_be_visible(timeout=60_000)
    page.locator("#vd-example").get_by_text("room B · 48 frames").click()
    expect(page.locator("#vd-estimate")).to_contain_text("48 frame(s)", timeout=120_000)


def test_a_bad_file_after_a_run_keeps_its_depth_video_and_says_why(page, tmp_path):
    from tests.browser.kept import expect_kept

    show_tab(page, "videodepth")
    page.locator("#vd-example").get_by_text("room B · 48 frames").click()
    expect(page.locator("#vd-estimate")).to_contain_text("48 frame(s)", timeout=120_000)
    for elem_id, value in (("vd-max-frames", "8"), ("vd-baseline", "0")):  # a short run
        box = page.locator(f"#{elem_id} input[type=number]").first
        box.fill(value)
        box.press("Enter")
    page.locator("#vd-run").click()
    expect(page.locator("#vd-status")).to_contain_text("Done: 8 frame(s)", timeout=240_000)
    expect(page.locator("#vd-video video")).to_have_count(1, timeout=30_000)
    shown = page.locator("#vd-video video").get_attribute("src")

    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"\x00" * 800)
    page.locator("#vd-input button[aria-label=Clear]").click()
    page.locator("#vd-input input[type=file]").set_input_files(str(bad))
    expect_kept(page, "#vd-estimate", "broken.mp4 is not a video")
    page.locator("#vd-run").click()
    expect_kept(page, "#vd-status", "broken.mp4 is not a video", outputs=("#vd-video", "#vd-preview", "#vd-files"),
                before="Done: 8 frame(s)")
    expect(page.locator("#vd-status")).not_to_contain_text("Running")
    assert page.locator("#vd-video video").get_attribute("src") == shown  # the depth video is still there
    expect(page.locator('#vd-files a[download="depth_png16.zip"]')).to_have_count(1)
