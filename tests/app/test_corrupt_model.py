"""An embedded model damaged on disk: ``models check`` and the action that loads it name the model, the
file and what to do; nothing runs on the damaged weights."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from backends.common import settings as settings_mod
from backends.common.errors import ModelCorruptError

ROOT = Path(__file__).resolve().parents[2]
MODEL = "counterfactual-classifier"


@pytest.fixture
def corrupt_assets(tmp_path, monkeypatch):
    """A copy of the Counterfactual assets with a few bytes of the classifier's weights flipped."""
    assets = tmp_path / "assets"
    for name in ("counterfactual-bridge", MODEL):
        shutil.copytree(ROOT / "assets" / name, assets / name)
    weights = assets / MODEL / "model.safetensors"
    data = bytearray(weights.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 4] = bytes(b ^ 0xFF for b in data[middle:middle + 4])
    weights.write_bytes(bytes(data))
    monkeypatch.setenv("ICLR25_ASSETS_DIR", str(assets))
    settings_mod.reset_settings()
    return assets


def test_models_check_names_the_corrupt_model_and_file(corrupt_assets):
    out = subprocess.run([sys.executable, "-m", "app", "models", "check", "counterfactual-bridge", MODEL],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)  # ICLR25_ASSETS_DIR: the copy
    assert out.returncode == 1, out.stdout
    assert "ok       counterfactual-bridge" in out.stdout  # the intact one passes
    line = next(ln for ln in out.stderr.splitlines() if ln.startswith("corrupt"))
    assert MODEL in line and "model.safetensors has sha256" in line
    assert f"git checkout -- assets/{MODEL}" in out.stderr  # what to do


def test_the_action_that_loads_it_says_model_not_available(corrupt_assets):
    from app.components.errors import as_gr_error
    from backends.counterfactual.service import _load

    with pytest.raises(ModelCorruptError) as info:
        _load.__wrapped__("counterfactual-bridge", MODEL, "cpu")  # the build itself, past the process cache
    err = info.value
    assert err.model_id == MODEL and any("model.safetensors" in p for p in err.problems)
    shown = as_gr_error(err)
    assert shown.title == "Model not available"
    assert f"Model '{MODEL}' is corrupt" in shown.message and "model.safetensors" in shown.message
    assert f"git checkout -- assets/{MODEL}" in shown.message and str(corrupt_assets) not in shown.message


def test_the_tab_names_it_when_its_action_runs(client, corrupt_assets):
    from gradio_client import handle_file

    from backends.counterfactual.service import _load

    image = ROOT / "app" / "static" / "examples" / "counterfactual" / "cube.png"
    _load.cache_clear()  # as in a fresh server: the models load (and are verified) on this action
    try:
        with pytest.raises(Exception, match=rf"Model '{MODEL}' is corrupt: model\.safetensors has sha256") as info:
            client.predict(handle_file(str(image)), "counterfactual-bridge", MODEL, api_name="/counterfactual_classify")
        assert f"git checkout -- assets/{MODEL}" in str(info.value)
    finally:
        _load.cache_clear()  # the next test loads the intact models again
