"""``python -m bench.realsize`` writes exactly the keys issue 24 asks for, here with its cheapest model.

ResNet-50 at 1/8 of its side (32×32): the same path as the full bench (the format check against the
authors' fixture, a fresh process per model, the JSON), in seconds.
"""

import json

from bench import realsize

KEYS = ["published_formats_checked", "published_formats_total", "full_size_cpu", "avatar_published_checkpoint_loads"]


def test_only_the_cheapest_model_writes_exactly_the_four_keys(tmp_path):
    out = tmp_path / "realsize.json"
    assert realsize.main(["--only", "resnet50-imagenet", "--downscale", "8", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert list(data) == KEYS
    assert data["published_formats_checked"] == ["resnet50-imagenet"]  # its loader matches torchvision's names
    assert data["published_formats_total"] == len(realsize.real_model_ids()) >= 10
    assert list(data["full_size_cpu"]) == ["resnet50-imagenet"]
    entry = data["full_size_cpu"]["resnet50-imagenet"]
    assert list(entry) == ["resolution", "seconds", "unit", "peak_rss_mb"]
    assert entry["resolution"] == "32×32" and entry["unit"].startswith("s/forward+backward")
    assert 0 < entry["seconds"] < 60
    assert 100 < entry["peak_rss_mb"] < 4000  # its own process: torch + 25.6 M parameters, not the test's
    assert data["avatar_published_checkpoint_loads"] is False  # not checked: lifegom is not among --only


def test_the_real_models_are_the_registrys_published_ones():
    from backends.common.registry import default_registry

    real = realsize.real_model_ids()
    sources = {s.id: s.source for s in default_registry()}
    assert {"sd15", "sdxl-base", "depth-any-video", "i2sb-imagenet-freeform"} <= set(real)
    assert all(sources[i] in ("hf", "local") for i in real)
    assert not [i for i, src in sources.items() if src in ("embedded", "package") and i in real]
    assert set(realsize.MEASURES) <= set(real)  # every timed model is a registered real one
