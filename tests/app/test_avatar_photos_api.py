"""The Avatar tab's photos source through gradio_client: photos of a person → the fitted skeleton per photo →
an avatar from the photos kept; a photo with no person is refused with a message. Rendered synthetic people
saved as PNG stand in for photos (no full-body photo of a real person ships with scikit-image or matplotlib)."""

import json

import numpy as np
import pytest
from gradio_client import handle_file
from skimage import data as skdata

from backends.common.imageio import save_png

NEUTRAL = [0, 45, 45, 0, 0, 5, 5, 0, 0, 5, 5, 0, 0, 0, 0]


@pytest.fixture(scope="module", autouse=True)
def _anny_loaded_once():
    from backends.avatar import body
    from backends.common.settings import Settings

    body.body_model(Settings())


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    from backends.avatar.data import sample_subject

    folder = tmp_path_factory.mktemp("photos")
    paths = []
    for i, v in enumerate(sample_subject(3_000_000, 2, 256).views):
        img = np.round((v.rgb * v.mask[..., None] + 0.8 * (1 - v.mask[..., None])) * 255).astype(np.uint8)
        paths.append(str(save_png(img, folder / f"person{i}.png")))
    return paths


@pytest.mark.slow
def test_photos_fit_then_reconstruct_from_the_kept_ones(client, photos):
    gallery, keep, status = client.predict([handle_file(p) for p in photos], api_name="/avatar_fit_photos")
    assert len(gallery) == 2 and [g["caption"] for g in gallery] == ["person0.png", "person1.png"]
    assert "Fitted one body to 2 photo(s)" in status
    # the person drops the second photo
    out = client.predict("photos", 0, 3, 1, None, None, None, *NEUTRAL, "avatar-embedded", ["person0.png"],
                         api_name="/avatar_reconstruct")
    views, msg, payload, bones = out
    assert len(views) == 1 and "upload (1 view)" in msg and "Gaussians in" in msg
    assert json.loads(payload)["count"] > 1000 and json.loads(bones)["id"] == json.loads(payload)["id"]


def test_a_photo_without_a_person_is_refused(client, tmp_path):
    coffee = str(save_png(skdata.coffee(), tmp_path / "coffee.png"))
    with pytest.raises(Exception, match="No person was found in coffee.png") as e:
        client.predict([handle_file(coffee)], api_name="/avatar_fit_photos")
    assert "Internal error" not in str(e.value)
