"""MediaPipe on photos: a rendered synthetic person passes; a portrait, a photo of nobody and two people are refused."""

import numpy as np
import pytest
from skimage import data as skdata

from backends.avatar.photos import HIPS, LOWER_BODY, SHOULDERS, detect, draw
from backends.common.errors import InputError


@pytest.fixture(scope="module")
def person():
    from backends.avatar.data import sample_subject

    view = sample_subject(3_000_000, 1, 256).views[0]
    return np.round((view.rgb * view.mask[..., None] + 0.8 * (1 - view.mask[..., None])) * 255).astype(np.uint8), view


def test_synthetic_person_passes_with_its_mask(person):
    photo, view = person
    det = detect(photo, "synthetic.png")
    assert det.landmarks.shape == (33, 2) and det.mask.shape == photo.shape[:2]
    assert all(det.seen(i) for i in SHOULDERS + LOWER_BODY)
    iou = (det.mask * view.mask).sum() / ((det.mask + view.mask) > 0).sum()
    assert iou > 0.9, iou
    # the hips lie on the body, above the knees (image y grows downwards)
    assert all(view.mask[int(det.landmarks[i, 1]), int(det.landmarks[i, 0])] > 0 for i in HIPS)
    assert det.landmarks[25, 1] > det.landmarks[23, 1] and det.landmarks[27, 1] > det.landmarks[25, 1]
    assert draw(det).shape == photo.shape


def test_portrait_is_refused_as_out_of_frame():
    # skimage's astronaut (Eileen Collins, waist up): MediaPipe finds her, but not her knees or ankles
    with pytest.raises(InputError, match="out of frame"):
        detect(skdata.astronaut(), "astronaut.png")


def test_no_person_is_refused():
    with pytest.raises(InputError, match="No person"):
        detect(skdata.coffee(), "coffee.png")


def test_two_people_are_refused(person):
    photo, _ = person
    bg = np.full((photo.shape[0], 40, 3), 204, np.uint8)
    pair = np.concatenate([photo, bg, photo], 1)
    with pytest.raises(InputError, match="more than one person"):
        detect(pair, "pair.png")


def test_a_non_image_is_refused():
    with pytest.raises(InputError, match="pixels"):
        detect(np.zeros((10, 10, 3), np.uint8), "tiny.png")


def test_the_shipped_real_photos_of_people_are_all_cut_off():
    # no photo of a real person's whole body ships with scikit-image or matplotlib: Grace Hopper is a
    # portrait, the cameraman is cut at the shins; both are refused as out of frame, naming what is missing
    import matplotlib.cbook as cbook
    from PIL import Image

    with Image.open(cbook.get_sample_data("grace_hopper.jpg")) as im:
        hopper = np.asarray(im.convert("RGB"))
    with pytest.raises(InputError, match=r"grace_hopper.jpg is mostly out of frame \(no hips, knees, ankles"):
        detect(hopper, "grace_hopper.jpg")
    with pytest.raises(InputError, match=r"camera.png is mostly out of frame \(no ankles"):
        detect(skdata.camera(), "camera.png")
