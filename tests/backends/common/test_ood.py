"""The shared out-of-domain score: held-out synthetic inputs pass, real photographs are flagged, the notice says
what would serve instead. Uses the statistics shipped in assets/ood-calibration."""

import numpy as np
import pytest
from PIL import Image

from backends.common import ood
from training.ood_calibration import TEST_SEEDS


def photo(name: str) -> np.ndarray:
    from pathlib import Path

    import matplotlib
    import skimage

    sk = Path(skimage.__file__).parent / "data" / name
    path = sk if sk.is_file() else Path(matplotlib.__file__).parent / "mpl-data" / "sample_data" / name
    return np.asarray(Image.open(path).convert("RGB"))


PHOTOS = ("astronaut.png", "coffee.png", "motorcycle_left.png", "grace_hopper.jpg")


def test_counterfactual_renders_pass_and_photos_are_flagged():
    from backends.counterfactual.data import make_example
    from backends.counterfactual.service import prepare_image

    for i in range(3):
        check = ood.check_inputs("counterfactual", [make_example(TEST_SEEDS["counterfactual"] + i).image])
        assert check.in_domain and check.notice == "", check
    for name in PHOTOS:
        check = ood.check_inputs("counterfactual", [prepare_image(photo(name), 32)])
        assert not check.in_domain, name
        assert "i2sb-imagenet-freeform" in check.notice and "resnet50-imagenet" in check.notice


def test_videodepth_clips_pass_and_photo_frames_are_flagged():
    from backends.videodepth.data import render_clip
    from bench.realinputs import videodepth_view

    for i in range(2):
        frames = render_clip(TEST_SEEDS["videodepth"] + i, 4).rgb
        check = ood.check_inputs("videodepth", list(frames))
        assert check.in_domain and check.inputs == 4, check
    for name in PHOTOS:
        check = ood.check_inputs("videodepth", [videodepth_view(photo(name))])
        assert not check.in_domain, name
        assert "`iclr25-studio models download depth-any-video`" in check.notice


def test_the_tabs_h264_example_clips_pass():
    """Uploaded videos come through a codec; its artefacts must not count as photographic detail."""
    from backends.common.video import iter_video_frames
    from backends.videodepth.examples import EXAMPLES, example_clip

    for name in EXAMPLES:
        frames = list(iter_video_frames(example_clip(name), 1024))
        picked = [frames[i] for i in np.linspace(0, len(frames) - 1, 8).round().astype(int)]
        check = ood.check_inputs("videodepth", picked)
        assert check.in_domain, (name, check)


def test_avatar_views_pass_and_photos_are_flagged_as_taken_or_cut_out():
    from backends.avatar.data import sample_subject
    from bench.realinputs import ellipse_mask
    from training.ood_calibration import avatar_view

    sample = sample_subject(TEST_SEEDS["avatar"], 2, 64)
    check = ood.check_inputs("avatar", [avatar_view(v.rgb, v.mask)[0] for v in sample.views])
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
