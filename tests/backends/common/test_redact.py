from pathlib import Path

from backends.common.redact import redact_paths
from backends.common.settings import Settings


def test_known_roots_are_written_relative(tmp_path):
    settings = Settings(assets_dir=tmp_path / "a" / "assets", models_dir=tmp_path / "m", offline=True)
    text = (f"Looked in {tmp_path}/m/stabilityai/sdxl (models folder) and {tmp_path}/a/assets/x/unet; "
            f"home {Path.home()}/.cache/hf")
    out = redact_paths(text, settings)
    assert str(tmp_path) not in out and str(Path.home()) not in out
    assert "$ICLR25_MODELS_DIR/stabilityai/sdxl (models folder)" in out
    assert "assets/x/unet" in out
    assert "~/.cache/hf" in out


def test_text_without_paths_is_unchanged():
    assert redact_paths("Model 'x' is missing.") == "Model 'x' is missing."
    assert redact_paths("") == ""
