"""The Counterfactual tab through gradio_client, as an API user would call it."""

import json
from pathlib import Path

import numpy as np
import pytest
from gradio_client import handle_file
from PIL import Image

EXAMPLES = Path(__file__).resolve().parents[2] / "app" / "static" / "examples" / "counterfactual"
BRIDGE, CLASSIFIER = "counterfactual-bridge", "counterfactual-classifier"


def editor_payload(tmp_path, image_path: Path, region: tuple[slice, slice] | None):
    """The ImageEditor value a browser would send: the 8× view and one RGBA mask layer."""
    small = np.asarray(Image.open(image_path).convert("RGB"))
    big = np.repeat(np.repeat(small, 8, 0), 8, 1)
    Image.fromarray(big).save(tmp_path / "bg.png")
    layer = np.zeros(big.shape[:2] + (4,), np.uint8)
    if region is not None:
        layer[region] = (255, 0, 80, 255)
    Image.fromarray(layer, "RGBA").save(tmp_path / "layer.png")
    return {"background": handle_file(str(tmp_path / "bg.png")), "layers": [handle_file(str(tmp_path / "layer.png"))],
            "composite": None}, small


def test_classify_an_example(client):
    _, label, info = client.predict(handle_file(str(EXAMPLES / "cube.png")), BRIDGE, CLASSIFIER,
                                    api_name="/counterfactual_classify")
    assert label["label"] == "cube"
    assert "counterfactual-bridge" in info and "cpu" in info


def test_generate_changes_only_the_region(client, tmp_path):
    region = (slice(64, 224), slice(48, 208))
    payload, small = editor_payload(tmp_path, EXAMPLES / "cube.png", region)
    preview, status, gallery, summary, files = client.predict(
        payload, "sphere", 1, 8, 1.5, 0.6, 0, BRIDGE, CLASSIFIER, api_name="/counterfactual_generate")
    assert summary["target"] == "sphere" and summary["original_prediction"] == "cube"
    assert len(summary["samples"]) == 1
    assert summary["samples"][0]["max_change_outside"] == 0
    names = {Path(f).name for f in files}
    assert {"original.png", "mask.png", "counterfactual_1.png", "run.json"} <= names
    cf = np.asarray(Image.open(next(f for f in files if f.endswith("counterfactual_1.png"))))
    mask = np.asarray(Image.open(next(f for f in files if f.endswith("mask.png")))) > 0
    assert np.array_equal(cf[~mask], small[~mask])
    assert mask[8:28, 6:26].all() and not mask[:8].any()


def test_a_named_call_sets_only_what_it_names(client, tmp_path):
    """``predict(api_name=..., **named)``: parameters named as the request's fields; the rest keep their defaults."""
    payload, _ = editor_payload(tmp_path, EXAMPLES / "cube.png", (slice(64, 224), slice(48, 208)))
    *_, summary, files = client.predict(image_and_region=payload, target="sphere", num_samples=1,
                                        num_inference_steps=4, api_name="/counterfactual_generate")
    card = json.loads(Path(next(f for f in files if f.endswith("run.json"))).read_text())
    assert card["request"]["num_inference_steps"] == 4 and card["request"]["guidance_scale"] == 16.0
    assert len(summary["samples"]) == 1


def test_a_downloaded_run_card_reproduces_its_images_through_the_cli(client, tmp_path):
    """Download from the tab, rerun with `iclr25-studio replay run.json`, compare the pixels."""
    import json
    import shutil
    import subprocess
    import sys

    payload, _ = editor_payload(tmp_path, EXAMPLES / "torus.png", (slice(40, 200), slice(40, 200)))
    *_, summary, files = client.predict(payload, "cone", 2, 6, 2.0, 0.7, 3, BRIDGE, CLASSIFIER,
                                        api_name="/counterfactual_generate")
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    for f in files:  # a person saves the downloads into one folder
        shutil.copy(f, downloads / Path(f).name)
    card = json.loads((downloads / "run.json").read_text())
    assert card["action"] == "counterfactual_generate" and card["request"]["bridge"] == BRIDGE
    assert card["request"]["seed"] == 3 and card["request"]["num_samples"] == 2
    assert card["result"]["models"]["bridge"] == BRIDGE
    assert {"difference_1.png", "region.png"} <= {p.name for p in downloads.iterdir()}
    out = tmp_path / "again"
    res = subprocess.run([sys.executable, "-m", "app", "replay", str(downloads / "run.json"),
                          "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    for name in ("counterfactual_1.png", "counterfactual_2.png", "difference_1.png", "mask.png", "region.png"):
        assert np.array_equal(np.asarray(Image.open(out / name)), np.asarray(Image.open(downloads / name))), name
    again = json.loads((out / "run.json").read_text())
    assert [s["predicted"] for s in again["result"]["samples"]] == [s["predicted"] for s in summary["samples"]]


def test_missing_region_is_a_clear_error(client, tmp_path):
    payload, _ = editor_payload(tmp_path, EXAMPLES / "cone.png", None)
    with pytest.raises(Exception, match="Paint the region"):
        client.predict(payload, "sphere", 1, 8, 1.5, 0.6, 0, BRIDGE, CLASSIFIER, api_name="/counterfactual_generate")


def test_auto_region_returns_a_mask_layer_and_heatmap(client, tmp_path):
    payload, _ = editor_payload(tmp_path, EXAMPLES / "torus.png", None)
    editor, heat = client.predict(payload, 0.25, 4, BRIDGE, CLASSIFIER, api_name="/counterfactual_region")
    layer = np.asarray(Image.open(editor["layers"][0]["path"] if isinstance(editor["layers"][0], dict) else editor["layers"][0]))
    region = layer[..., 3] > 0
    assert abs(region.mean() - 0.25) < 0.02
    heat_rgb = np.asarray(Image.open(heat))
    assert heat_rgb.shape[:2] == region.shape  # the heat map is shown at the editor's scale
    red = heat_rgb[..., 0].astype(float)  # the attribution, 0..255
    assert red[region].mean() > red[~region].mean() + 20  # the region is where the attribution is


def test_choosing_a_missing_real_checkpoint_names_it_and_where_it_was_looked_for(client):
    with pytest.raises(Exception, match="i2sb-imagenet-freeform.*missing"):
        client.predict("i2sb-imagenet-freeform", CLASSIFIER, "sphere", api_name="/counterfactual_models")
    target, info = client.predict(BRIDGE, CLASSIFIER, "cone", api_name="/counterfactual_models")
    assert target["value"] == "cone" and ["torus", "torus"] in target["choices"] and "counterfactual-bridge" in info


def test_stop_ends_a_long_generation_between_steps(client, tmp_path):
    import time

    payload, _ = editor_payload(tmp_path, EXAMPLES / "sphere.png", (slice(64, 224), slice(48, 208)))
    job = client.submit(payload, "cube", 8, 200, 1.5, 0.6, 0, BRIDGE, CLASSIFIER, api_name="/counterfactual_generate")
    deadline = time.time() + 60
    while time.time() < deadline and not any("Running" in str(o) for o in job.outputs()):
        time.sleep(0.1)
    time.sleep(1.0)
    assert client.predict(api_name="/counterfactual_stop") == "Stopping…"
    status = job.result(timeout=120)[1]
    assert status.startswith("Stopped by the user: this run made no counterfactuals")
    assert "are the previous run's" in status  # what is still shown below is not taken for this run's


def test_an_unreadable_upload_is_a_clear_error(client, tmp_path):
    fake = tmp_path / "photo.png"
    fake.write_text("this is a text file renamed to .png\n" * 20)
    with pytest.raises(Exception, match="not an image this suite can read"):
        client.predict(handle_file(str(fake)), BRIDGE, CLASSIFIER, api_name="/counterfactual_classify")


def test_an_image_far_from_the_domain_is_flagged_and_a_render_is_not(client, tmp_path):
    noise = np.random.default_rng(0).integers(0, 256, (1000, 1000, 3), dtype=np.uint8)
    Image.fromarray(noise).save(tmp_path / "noise.png")
    _, label, info = client.predict(handle_file(str(tmp_path / "noise.png")), BRIDGE, CLASSIFIER,
                                    api_name="/counterfactual_classify")
    assert label["label"] in ("cube", "sphere", "cylinder", "cone", "torus")  # it still answers ...
    assert "⚠️" in info and "unlike anything the embedded model was trained on" in info  # ... with a warning
    _, _, info = client.predict(handle_file(str(EXAMPLES / "cone.png")), BRIDGE, CLASSIFIER,
                                api_name="/counterfactual_classify")
    assert "⚠️" not in info


def test_light_actions_do_not_wait_behind_a_generation(client, tmp_path):
    """A prediction and an automatic region answer while another user's long generation runs."""
    import time

    from gradio_client import Client

    payload, _ = editor_payload(tmp_path, EXAMPLES / "sphere.png", (slice(64, 224), slice(48, 208)))
    heavy = Client(client.src, verbose=False)  # another user
    job = heavy.submit(payload, "cube", 8, 200, 1.5, 0.6, 0, BRIDGE, CLASSIFIER, api_name="/counterfactual_generate")
    deadline = time.time() + 60
    while time.time() < deadline and not any("Running" in str(o) for o in job.outputs()):
        time.sleep(0.1)
    try:
        t0 = time.perf_counter()
        _, label, _ = client.predict(handle_file(str(EXAMPLES / "cube.png")), BRIDGE, CLASSIFIER,
                                     api_name="/counterfactual_classify")
        region_payload, _ = editor_payload(tmp_path, EXAMPLES / "torus.png", None)
        editor, _ = client.predict(region_payload, 0.25, 4, BRIDGE, CLASSIFIER, api_name="/counterfactual_region")
        waited = time.perf_counter() - t0
        assert label["label"] == "cube" and editor["layers"]
        assert not job.done(), "the generation ended first, so this test proved nothing"
        assert waited < 60
    finally:
        heavy.predict(api_name="/counterfactual_stop")
        job.result(timeout=120)
        heavy.close()
