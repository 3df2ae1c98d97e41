"""The LLM Compression tab through gradio_client, as an API user would call it (a tiny random Llama, named by a
Hub id in a Hugging Face cache of the test's own: the tab refuses folders of the server)."""

import json
from pathlib import Path

import pytest
from gradio_client import handle_file

from tests.backends.compress.tiny_lm import cache_as_hub, make_tiny_lm, one_thread

SMALL = {"ratio": 40, "shared": "q,up,gate", "group_size": 2, "refit": False, "baselines": True,
         "calibration_text": "stdlib-docstrings", "eval_text": "devils-dictionary", "calibration_blocks": 2,
         "block_tokens": 32, "eval_windows": 1}


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return make_tiny_lm(tmp_path_factory.mktemp("tiny-lm"))


@pytest.fixture(scope="module")
def tiny(tiny_folder, tmp_path_factory):
    """The tiny model's Hub id, in a Hugging Face cache the (in-process) live app reads for this module."""
    import huggingface_hub.constants as constants

    cache = tmp_path_factory.mktemp("hf-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(constants, "HF_HUB_CACHE", str(cache))
        yield cache_as_hub(tiny_folder, cache)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


def compress(client, model, **over):
    return client.predict(model=model, **{**SMALL, **over}, api_name="/compress_run")


def error_of(fn) -> str:
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return str(e)
    raise AssertionError("the call was accepted")


def test_compress_heal_table_download_load_back_and_chat(client, tiny):
    status, table, plot, files, summary = compress(client, tiny, heal_steps=3, heal_rank=4, heal_lr=1e-2)
    methods = [row[0] for row in table["data"]]
    assert methods == ["Original", "Basis Sharing", "SVD-LLM", "SVD"]
    assert table["headers"][2] == "perplexity after heal"
    healed = {row[0]: row[2] for row in table["data"]}
    assert healed["Original"] in ("", None) and all(isinstance(healed[m], float) for m in methods[1:])
    heals = [r["heal"] for r in summary["results"] if "heal" in r]
    assert len(heals) == 3 and {(h["steps"], h["rank"], h["tokens"]) for h in heals} == {(3, 4, 96)}  # one budget
    assert summary["heal"]["steps"] == 3 and "after a LoRA heal of 3 steps" in status
    params = {row[0]: row[3] for row in table["data"]}
    assert params["Basis Sharing"] < params["Original"] and params["SVD-LLM"] < params["Original"]
    assert summary["ratio"] == 40 and summary["shared"] == ["q", "up", "gate"]
    assert "Basis Sharing perplexity" in status
    names = {Path(f).name for f in files}
    assert {"model.safetensors", "compress.json", "config.json", "run.json", "results.json"} <= names
    card = json.loads(Path(next(f for f in files if f.endswith("run.json"))).read_text())
    assert card["action"] == "compress_run" and card["request"]["ratio"] == 40
    _, left, right = client.predict("def add(a, b):", 3, api_name="/compress_chat")
    assert isinstance(left, str) and isinstance(right, str)
    loaded = client.predict([handle_file(f) for f in files if not f.endswith("run.json")],
                            api_name="/compress_load")
    assert "basis_sharing model at 40 %" in loaded
    _, left2, right2 = client.predict("def add(a, b):", 3, api_name="/compress_chat")
    assert (left2, right2) == (left, right)  # the loaded-back (healed, merged) model answers as the one just made


def test_a_folder_of_the_server_is_refused_and_the_page_shows_no_path(client, tiny_folder):
    """The page and API name models by registry or Hub id; a folder of the server (even one holding a model) is
    not theirs to give (the CLI takes folders)."""
    for given in (str(tiny_folder), "~/models/x", "../tiny-lm/x"):
        msg = error_of(lambda g=given: compress(client, g))
        assert "a folder of the server is not accepted" in msg, msg


def test_bad_inputs_are_clear_errors(client, tiny, tmp_path):
    import huggingface_hub.constants as constants
    from transformers import ViTConfig

    ViTConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8).save_pretrained(tmp_path)
    vit = cache_as_hub(tmp_path, constants.HF_HUB_CACHE, "tiny-tests/vit")
    assert "not a causal language model" in error_of(lambda: compress(client, vit))
    assert "neither a model the suite knows" in error_of(lambda: compress(client, "no-such/model-anywhere"))
    msg = error_of(lambda: compress(client, tiny, calibration_blocks=256, block_tokens=2048))
    assert "The calibration text has" in msg and "524288 are needed" in msg
