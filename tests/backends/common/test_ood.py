"""The shared out-of-domain score: held-out synthetic inputs pass, real photographs are flagged, the notice says
what would serve instead. Uses the statistics shipped in assets/ood-calibration."""

import numpy as np
import pytest
from PIL import Image

from backends.common import ood
from training.ood_calibration import TEST_SEED0


def photo(name: str) -> np.ndarray:
    return np.asarray(Image.open(ood.photo_path(name)).convert("RGB"))


PHOTOS = ("astronaut.png", "coffee.png", "motorcycle_left.png", "grace_hopper.jpg")


def test_counterfactual_renders_pass_and_photos_are_flagged():
    from backends.counterfactual.data import make_example
    from backends.counterfactual.service import prepare_image

    for i in range(3):
        check = ood.check_inputs("counterfactual", [make_example(TEST_SEED0 + i).image])
        assert check.in_domain and check.notice == "", check
    for name in PHOTOS:
        check = ood.check_inputs("counterfactual", [prepare_image(photo(name), 32)])
        assert not check.in_domain, name
        assert "i2sb-imagenet-freeform" in check.notice and "resnet50-imagenet" in check.notice


def test_videodepth_clips_pass_and_held_out_photos_are_flagged():
    """The photos the statistics were never fitted on nor calibrated with (an animal, an object close-up, a
    greyscale portrait, a texture, a micrograph), each whole as a person uploads it, seen at the working size."""
    from backends.videodepth.data import ood_view, render_clip

    stats = ood.load_domain("videodepth")
    assert not set(stats.meta["fit_photos"]) & set(ood.HELD_OUT_PHOTOS)  # nothing held out was fitted on
    assert stats.direction is not None and stats.jpeg_quality == 95
    for i in range(2):
        frames = render_clip(TEST_SEED0 + i, 4).rgb
        check = ood.check_inputs("videodepth", list(frames))
        assert check.in_domain and check.inputs == 4, check
    assert {"chelsea.png", "coffee.png"} <= set(ood.HELD_OUT_PHOTOS)  # the animal and the close-up
    for name in ood.HELD_OUT_PHOTOS:
        check = ood.check_inputs("videodepth", [ood_view(photo(name))])
        assert not check.in_domain, (name, check)
        assert "`iclr25-studio models download depth-any-video`" in check.notice


def test_the_photo_sets_are_disjoint_and_licensed():
    assert set(ood.FIT_PHOTOS).isdisjoint(ood.HELD_OUT_PHOTOS)
    assert set(ood.FIT_PHOTOS) | set(ood.HELD_OUT_PHOTOS) == set(ood.PHOTOS)
    for name, licence in ood.PHOTOS.items():
        assert ood.photo_path(name).is_file() and ("CC0" in licence or "public domain" in licence
                                                   or "no known copyright" in licence), name
    with pytest.raises(KeyError):
        ood.photo("motorcycle_left.png")  # its licence is not stated: never used


def test_the_tabs_h264_example_clips_pass():
    """Uploaded videos come through a codec; its artefacts must not count as photographic detail."""
    from backends.common.video import iter_video_frames
    from backends.videodepth.examples import EXAMPLES, example_clip

    for name in EXAMPLES:
        frames = list(iter_video_frames(example_clip(name), 1024))
        picked = [frames[i] for i in np.linspace(0, len(frames) - 1, 8).round().astype(int)]
        check = ood.check_inputs("videodepth", picked)
        assert check.in_domain, (name, check)


@pytest.mark.timeout(900)  # it may be the process's first build of the body model (tests/conftest.py)
def test_avatar_views_pass_and_photos_are_flagged_as_taken_or_cut_out():
    from backends.avatar.data import ood_inputs
    from bench.realinputs import avatar_view, ellipse_mask

    views, _ = ood_inputs(TEST_SEED0, 2)
    check = ood.check_inputs("avatar", views)
    assert check.in_domain, check
    for name in ("astronaut.png", "grace_hopper.jpg"):
        img = photo(name)
        for mask in (np.ones(img.shape[:2], np.float32), ellipse_mask(*img.shape[:2])):  # as taken, cut out
            check = ood.check_inputs("avatar", [avatar_view(img, mask)[0]])
            assert not check.in_domain, name
            assert "lifegom" in check.notice


def test_the_notice_names_what_the_model_knows_and_the_command_and_lets_the_run_go_ahead():
    inside = ood.DomainCheck("videodepth", 1.0, 2.0, 8)
    assert inside.in_domain and inside.notice == "" and inside.to_json()["notice"] == ""
    out = ood.DomainCheck("counterfactual", 9.0, 2.0, 1)
    assert "only knows 32×32 renders" in out.notice and "The run goes ahead" in out.notice
    # neither counterfactual model is on the Hub: the command says where to put them rather than fetching
    assert "not on the Hugging Face Hub" in out.notice
    assert out.to_json() == {"in_domain": False, "distance": 9.0, "threshold": 2.0, "inputs": 1, "notice": out.notice}


def test_fit_stats_threshold_is_the_calibration_quantile_and_survives_save_load(tmp_path):
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 5, (3, len(ood.FEATURE_NAMES)))  # a mixture, like the synthetic worlds
    draw = lambda n: centres[rng.integers(3, size=n)] + rng.normal(size=(n, len(ood.FEATURE_NAMES)))  # noqa: E731
    stats = ood.fit_stats(draw(600), draw(400), quantile=0.95)
    held_out = stats.distance(draw(1000))
    assert 0.02 < np.mean(held_out > stats.threshold) < 0.1
    far = np.full((1, len(ood.FEATURE_NAMES)), 40.0)
    assert stats.distance(far)[0] > 3 * stats.threshold
    loaded = ood.DomainStats.load(stats.save(tmp_path / "x.safetensors"))
    assert loaded.threshold == pytest.approx(stats.threshold)
    assert np.allclose(loaded.distance(far), stats.distance(far), rtol=1e-5)


def test_auroc():
    assert ood.auroc(np.array([0.0, 1.0]), np.array([2.0, 3.0])) == 1.0
    assert ood.auroc(np.array([1.0]), np.array([1.0])) == 0.5


def test_a_photo_direction_finds_what_tells_photos_apart_and_survives_save_load(tmp_path):
    rng = np.random.default_rng(1)
    d = len(ood.FEATURE_NAMES)
    synthetic, calib = rng.normal(size=(600, d)), rng.normal(size=(400, d))
    photos = rng.normal(size=(120, d))
    photos[:, 3] += 2.5  # photos differ from the renders in one statistic only, which the distance dilutes
    direction = ood.photo_direction(synthetic, photos, weight=3.0)
    assert np.argmax(np.abs(direction)) == 3
    mean, scale = ood.standardizer(synthetic)
    assert np.std((synthetic - mean) / scale @ direction) == pytest.approx(3.0)
    plain = ood.fit_stats(synthetic, calib, 0.98)
    weighted = ood.fit_stats(synthetic, calib, 0.98, direction=direction)
    assert np.mean(weighted.distance(photos) > weighted.threshold) > np.mean(plain.distance(photos) > plain.threshold) + 0.2
    weighted.jpeg_quality = 95
    loaded = ood.DomainStats.load(weighted.save(tmp_path / "w.safetensors"))
    assert loaded.jpeg_quality == 95 and np.allclose(loaded.direction, direction)
    assert np.allclose(loaded.distance(photos), weighted.distance(photos), rtol=1e-5)
    assert ood.DomainStats.load(plain.save(tmp_path / "p.safetensors")).direction is None


def test_the_threshold_flags_photos_and_never_more_synthetic_inputs_than_the_quantile():
    synthetic = np.arange(100) / 100  # 0.00 … 0.99
    # a gap above the synthetic inputs: the threshold sits in its middle
    assert ood.choose_threshold(synthetic, np.array([2.0, 3.0, 4.0]), 0.98) == pytest.approx((0.99 + 2.0) / 2)
    # photos among the synthetic inputs: it does not go below their quantile to catch them
    t = ood.choose_threshold(synthetic, np.array([0.5, 3.0]), 0.98)
    assert np.mean(synthetic > t) <= 0.02 and t < 3.0
