"""The LLM Compression tab through gradio_client, as an API user would call it (a tiny random Llama by folder)."""

import json
from pathlib import Path

import pytest
from gradio_client import handle_file

from tests.backends.compress.tiny_lm import make_tiny_lm, one_thread

SMALL = {"ratio": 40, "shared": "q,up,gate", "group_size": 2, "refit": False, "baselines": True,
         "calibration_text": "stdlib-docstrings", "eval_text": "python-reference", "calibration_blocks": 2,
         "block_tokens": 32, "eval_windows": 1}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return str(make_tiny_lm(tmp_path_factory.mktemp("tiny-lm")))


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


def test_compress_table_download_load_back_and_chat(client, tiny):
    status, table, plot, files, summary = compress(client, tiny)
    methods = [row[0] for row in table["data"]]
    assert methods == ["Original", "Basis Sharing", "SVD-LLM", "SVD"]
    params = {row[0]: row[2] for row in table["data"]}
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
    assert (left2, right2) == (left, right)  # the loaded-back model answers exactly as the one just made


def test_bad_inputs_are_clear_errors(client, tiny, tmp_path):
    from transformers import ViTConfig

    ViTConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8).save_pretrained(tmp_path)
    assert "not a causal language model" in error_of(lambda: compress(client, str(tmp_path)))
    assert "neither a model the suite knows" in error_of(lambda: compress(client, "no-such/model-anywhere"))
    msg = error_of(lambda: compress(client, tiny, calibration_blocks=256, block_tokens=2048))
    assert "The calibration text has" in msg and "524288 are needed" in msg
