"""Through the API as a user calls it: a real photo gets the out-of-domain notice in the result (naming the real
model and its download command), a held-out synthetic example does not; the run goes ahead either way."""

from pathlib import Path

import numpy as np
import skimage
from gradio_client import handle_file
from PIL import Image

PHOTO = Path(skimage.__file__).parent / "data" / "astronaut.png"
CF_EXAMPLES = Path(__file__).resolve().parents[2] / "app" / "static" / "examples" / "counterfactual"
BRIDGE, CLASSIFIER = "counterfactual-bridge", "counterfactual-classifier"


def cf_editor(tmp_path, image: np.ndarray):
    """The editor value a browser sends after an upload: the image and a mask over its centre."""
    Image.fromarray(image).save(tmp_path / "bg.png")
    layer = np.zeros(image.shape[:2] + (4,), np.uint8)
    h, w = image.shape[:2]
    layer[h // 4:3 * h // 4, w // 4:3 * w // 4] = (255, 0, 80, 255)
    Image.fromarray(layer, "RGBA").save(tmp_path / "layer.png")
    return {"background": handle_file(str(tmp_path / "bg.png")), "layers": [handle_file(str(tmp_path / "layer.png"))],
            "composite": None}


def test_counterfactual_photo_gets_the_notice_at_upload_and_in_the_generate_result(client, tmp_path):
    _, label, info = client.predict(handle_file(str(PHOTO)), BRIDGE, CLASSIFIER, api_name="/counterfactual_classify")
    assert label["label"]  # it still answers ...
    assert "⚠️" in info and "only knows 32×32 renders" in info  # ... and says what it knows
    assert "iclr25-studio models download i2sb-imagenet-freeform resnet50-imagenet" in info
    photo = np.asarray(Image.open(PHOTO).convert("RGB").resize((256, 256)))
    _, status, _, summary, files = client.predict(cf_editor(tmp_path, photo), "sphere", 1, 4, 1.5, 0.6, 0, BRIDGE,
                                                  CLASSIFIER, api_name="/counterfactual_generate")
    assert len(summary["samples"]) == 1  # the run went ahead
    assert summary["domain"]["in_domain"] is False and "i2sb-imagenet-freeform" in summary["domain"]["notice"]
    assert "⚠️" in status and "only knows" in status


def test_counterfactual_example_has_no_notice(client, tmp_path):
    _, _, info = client.predict(handle_file(str(CF_EXAMPLES / "cone.png")), BRIDGE, CLASSIFIER,
                                api_name="/counterfactual_classify")
    assert "⚠️" not in info
    small = np.asarray(Image.open(CF_EXAMPLES / "cone.png").convert("RGB"))
    _, status, _, summary, _ = client.predict(cf_editor(tmp_path, np.repeat(np.repeat(small, 8, 0), 8, 1)), "sphere",
                                              1, 4, 1.5, 0.6, 0, BRIDGE, CLASSIFIER, api_name="/counterfactual_generate")
    assert summary["domain"]["in_domain"] is True and summary["domain"]["notice"] == "" and "⚠️" not in status


def vd_settings(max_frames=8):
    return ["videodepth-embedded", 64, 1, 12, max_frames, "Spectral", 0, 0, "zero", "auto"]


def test_videodepth_photo_gets_the_notice_and_an_example_clip_does_not(client):
    *_, status, _, files, _, summary = client.predict(handle_file(str(PHOTO)), *vd_settings(),
                                                      api_name="/videodepth_run")
    assert summary["frames"] == 1 and len(files) == 5  # the run went ahead: 3 outputs, its run card and input
    assert summary["domain"]["in_domain"] is False
    assert "`iclr25-studio models download depth-any-video`" in summary["domain"]["notice"]
    assert "⚠️" in status and "only knows 64-pixel renders" in status
    clip = client.predict("room A · 48 frames", api_name="/videodepth_example")
    clip = clip["path"] if isinstance(clip, dict) else clip
    *_, status, _, _, _, summary = client.predict(handle_file(clip), *vd_settings(), api_name="/videodepth_run")
    assert summary["domain"]["in_domain"] is True and summary["domain"]["inputs"] == 8 and "⚠️" not in status
