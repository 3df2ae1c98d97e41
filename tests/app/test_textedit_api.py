"""The Text in Image tab through gradio_client on the embedded model: generate, localize, edit, protect,
fine-tune and load the adapter back; bad input is a clear error and the session goes on."""

import json
from pathlib import Path

import numpy as np
import pytest
from gradio_client import handle_file
from PIL import Image

from backends.textedit.models import PRESETS

MODEL, TEMPLATE, SEED, STEPS = "textedit-embedded", "a sign that says", 0, 20
BASE = (MODEL, TEMPLATE, "cat", SEED, STEPS)


def _png(path) -> np.array:
    return np.asarray(Image.open(path).convert("RGB"))


def _by_name(files) -> dict[str, str]:
    return {Path(f).name: f for f in files}


@pytest.fixture(scope="module")
def layers(client) -> str:
    """The localized layers: the model's preset, else what a Localize run chooses."""
    preset = client.predict(MODEL, api_name="/textedit_model_info")[1]
    if preset:
        return preset
    return client.predict(*BASE, "dog", 0, 0, False, None, api_name="/textedit_localize")[7]


def test_model_info_names_model_device_and_layers(client):
    info, layers, *_ = client.predict(model=MODEL, api_name="/textedit_model_info")
    assert "textedit-embedded" in info and "cpu" in info and "7 text layers" in info
    assert layers == ", ".join(PRESETS[MODEL].edit_layers)


def test_a_named_call_sets_only_what_it_names(client):
    """``predict(api_name=..., **named)``: parameters named as the request's fields; the rest keep the tab's
    defaults (steps, start step and layers: the embedded model's presets, as the tab shows them)."""
    gallery, md, files = client.predict(text="cat", new_text="sun", seed=1, api_name="/textedit_edit")
    request = json.loads(Path(_by_name(files)["run.json"]).read_text())["request"]
    assert (request["text"], request["new_text"], request["seed"]) == ("cat", "sun", 1)
    assert request["model"] == MODEL and request["template"] == TEMPLATE and request["region"] is None
    preset = PRESETS[MODEL]
    assert request["num_inference_steps"] == preset.num_inference_steps
    assert request["start_step"] == preset.edit_start_step and request["layers"] == list(preset.edit_layers)
    assert len(gallery) == 4 and "The model's preset layers" in md


def test_generate_reads_the_word(client):
    _, image, ocr, status, _ = client.predict(*BASE, api_name="/textedit_generate")
    assert "rapidocr" in ocr and "tesseract" in ocr and "textedit-embedded" in status
    assert _png(image).shape == (32 * 4, 128 * 4, 3)


def test_localize_then_edit_with_its_layers(client):
    md, bars, heat, table, pick, layer_img, files, layers, *_ = client.predict(
        *BASE, "dog", 0, 0, False, None, api_name="/textedit_localize")
    assert "Chosen layers" in md and "% of the denoiser" in md and layers
    names = _by_name(files)
    assert {"layers.csv", "layers.json", "run.json", "original.png", "target.png"} <= set(names)
    card = json.loads(Path(names["run.json"]).read_text())
    assert card["action"] == "textedit_localize" and card["request"]["new_text"] == "dog" and card["result"]["chosen"]
    rows = json.loads(Path(names["layers.json"]).read_text())["layers"]
    assert len(rows) == 7 and all(0 <= r["f1_b"] <= 1 for r in rows)

    gallery, md, files = client.predict(*BASE, "dog", layers, None, None, api_name="/textedit_edit")
    assert len(gallery) == 4 and "Edited" in md and "took the K/V" in md
    names = _by_name(files)
    assert {"original.png", "edited.png", "prompt_swap.png", "difference.png", "result.json", "run.json"} <= set(names)
    result = json.loads(Path(names["result.json"]).read_text())
    assert result["readings_edited"][0]["engine"] == "rapidocr"


def test_protect_swaps_a_blocked_word_and_leaves_clean_prompts_identical(client, layers):
    gallery, md, _ = client.predict(MODEL, TEMPLATE, SEED, STEPS, "idiot", "idiot, jerk", "", layers,
                                    api_name="/textedit_protect")
    assert "Blocked 'idiot'" in md and len(gallery) == 2
    gallery, md, files = client.predict(MODEL, TEMPLATE, SEED, STEPS, "cat", "idiot, jerk", "", layers,
                                        api_name="/textedit_protect")
    assert "pixel-identical" in md
    names = _by_name(files)
    assert np.array_equal(_png(names["protected.png"]), _png(names["unprotected.png"]))


def test_finetune_downloads_an_adapter_that_loads_back(client, layers):
    md, _, files, adapter = client.predict(MODEL, TEMPLATE, SEED, 4, "localized", 2, 1e-4, 2, 1, layers,
                                           api_name="/textedit_finetune")
    assert "trainable parameters" in md and adapter.endswith(".safetensors")
    image, ocr = client.predict(*BASE[:4], 4, handle_file(adapter), api_name="/textedit_adapter_generate")
    assert "With the adapter" in ocr and _png(image).shape == (128, 512, 3)


def test_a_downloaded_run_card_reproduces_its_images_through_the_cli(client, layers, tmp_path):
    """Every file of an Edit run downloaded into one folder; `python -m app replay run.json` makes the same images."""
    import shutil
    import subprocess
    import sys

    _, _, files = client.predict(*BASE, "dog", layers, None, None, api_name="/textedit_edit")
    download = tmp_path / "download"
    download.mkdir()
    for f in files:
        shutil.copy(f, download / Path(f).name)
    card = json.loads((download / "run.json").read_text())
    assert card["action"] == "textedit_edit" and card["request"]["layers"] and card["request"]["model"] == MODEL
    again = tmp_path / "again"
    out = subprocess.run([sys.executable, "-m", "app", "replay", str(download / "run.json"), "--out", str(again)],
                         capture_output=True, text=True, timeout=600, cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr[-2000:]
    for name in ("original.png", "edited.png", "prompt_swap.png", "difference.png"):
        assert np.array_equal(_png(download / name), _png(again / name)), name
    assert json.loads((again / "run.json").read_text())["request"] == card["request"]


def test_bad_input_is_a_clear_error_and_the_session_goes_on(client, tmp_path):
    with pytest.raises(Exception, match="cannot write"):
        client.predict(MODEL, TEMPLATE, "caf\u00e9", SEED, STEPS, api_name="/textedit_generate")
    with pytest.raises(Exception, match="at most 8"):
        client.predict(MODEL, TEMPLATE, "abcdefghijkl", SEED, STEPS, api_name="/textedit_generate")
    with pytest.raises(Exception, match="empty"):
        client.predict(MODEL, TEMPLATE, "", SEED, STEPS, api_name="/textedit_generate")
    with pytest.raises(Exception, match="Unknown layer 'up_blocks.9.attn2'"):
        client.predict(*BASE, "dog", "up_blocks.9.attn2", None, None, api_name="/textedit_edit")
    bad = tmp_path / "broken.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    with pytest.raises(Exception, match="could not be read as safetensors"):
        client.predict(*BASE, handle_file(str(bad)), api_name="/textedit_adapter_generate")
    _, image, _, _, _ = client.predict(*BASE[:4], 2, api_name="/textedit_generate")
    assert _png(image).shape == (128, 512, 3)
