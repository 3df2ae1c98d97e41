"""The Avatar tab's photos source in a real browser: photos of a person → each with its fitted skeleton →
an avatar in the viewer; a photo with no person is refused with a message. Rendered synthetic people saved
as PNG stand in for photos (no full-body photo of a real person ships with scikit-image or matplotlib)."""

import numpy as np
import pytest
from playwright.sync_api import expect
from skimage import data as skdata

from backends.common.imageio import save_png
from tests.browser.avatar_viewer import viewer_pixels, wait_drawn

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module", autouse=True)
def _anny_loaded_once():
    from backends.avatar import body
    from backends.common.settings import Settings

    body.body_model(Settings())


def test_photos_of_a_person_become_an_avatar_and_no_person_is_refused(page, tmp_path):
    from backends.avatar.data import sample_subject

    photos = []
    for i, v in enumerate(sample_subject(3_000_001, 2, 256).views):
        img = np.round((v.rgb * v.mask[..., None] + 0.8 * (1 - v.mask[..., None])) * 255).astype(np.uint8)
        photos.append(str(save_png(img, tmp_path / f"person{i}.png")))
    page.get_by_role("tab", name="Avatar").click()
    page.locator("#av-source").get_by_text("Photos of a person").click()
    page.locator("#av-photos input[type=file]").set_input_files(photos)
    expect(page.locator("#av-photos")).to_contain_text("person1", timeout=30_000)  # the file list shows "person1 .png"
    page.locator("#av-fit").click()
    expect(page.locator("#av-fit-status")).to_contain_text("Fitted one body to 2 photo(s)", timeout=240_000)
    expect(page.locator("#av-fit-gallery img")).to_have_count(2)
    expect(page.locator("#av-keep")).to_contain_text("person0.png")
    page.locator("#av-reconstruct").click()
    expect(page.locator("#av-status")).to_contain_text("upload (2 views)", timeout=240_000)
    expect(page.locator("#av-status")).to_contain_text("Gaussians in")
    wait_drawn(page, "v.dataset.splats > 1000")
    assert (viewer_pixels(page).sum(-1) < 700).mean() > 0.01  # the avatar is drawn, not only the background

    coffee = str(save_png(skdata.coffee(), tmp_path / "coffee.png"))
    page.locator("#av-photos input[type=file]").set_input_files([coffee])
    expect(page.locator("#av-photos")).to_contain_text("coffee", timeout=30_000)
    page.locator("#av-fit").click()
    expect(page.locator("#av-fit-status")).to_contain_text("No person was found in coffee.png", timeout=120_000)
    expect(page.locator("#av-fit-gallery img")).to_have_count(2)  # the last fit stays shown
