import hashlib

import pytest

from backends import CAPABILITIES
from backends.common.errors import InputError, ModelCorruptError, ModelMissingError
from backends.common.registry import (
    ModelRegistry,
    ModelSpec,
    default_registry,
    model_status,
    resolve,
    status_table,
    verify_checksums,
)
from backends.common.settings import Settings


@pytest.fixture
def settings(tmp_path):
    return Settings(assets_dir=tmp_path / "assets", models_dir=tmp_path / "models", offline=True)


def make_asset(settings, name="tiny", content=b"weights"):
    folder = settings.assets_dir / name
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(content)
    digest = hashlib.sha256(content).hexdigest()
    spec = ModelSpec(id=name, capability="games", kind="test", source="embedded", location=name,
                     files=("model.safetensors",), sha256={"model.safetensors": digest})
    return spec, folder


def test_embedded_asset_resolves_and_is_verified(settings):
    spec, folder = make_asset(settings)
    found = resolve(spec, settings)
    assert found.path == folder and found.where == "embedded assets"
    st = model_status(spec, settings)
    assert st.present and st.size_mb == pytest.approx(7 / 2**20)


def test_tampered_asset_is_reported_corrupt(settings):
    spec, folder = make_asset(settings)
    (folder / "model.safetensors").write_bytes(b"weightz")
    with pytest.raises(ModelCorruptError, match="sha256"):
        resolve(spec, settings)
    st = model_status(spec, settings)
    assert not st.present and "sha256" in st.problem


def test_embedded_spec_needs_checksums():
    with pytest.raises(ValueError, match="sha256"):
        ModelSpec(id="x", capability="games", kind="t", source="embedded", location="x", files=("a.bin",))


def test_missing_hf_model_names_model_places_and_instructions(settings):
    spec = ModelSpec(id="big", capability="layout3d", kind="pipeline", source="hf",
                     location="someone/big-model", files=("model_index.json",))
    with pytest.raises(ModelMissingError) as info:
        resolve(spec, settings)
    err = info.value
    message = str(err)
    assert "big" in message
    assert str(settings.models_dir / "someone/big-model") in message
    assert "Hugging Face cache" in message
    assert "hf download someone/big-model" in message
    assert len(err.searched) == 3


def test_hf_model_in_models_dir_is_found_without_download(settings):
    spec = ModelSpec(id="big", capability="layout3d", kind="pipeline", source="hf",
                     location="someone/big-model", files=("model_index.json", "unet/config.json"))
    folder = settings.models_dir / "someone--big-model"
    (folder / "unet").mkdir(parents=True)
    (folder / "model_index.json").write_text("{}")
    with pytest.raises(ModelMissingError):
        resolve(spec, settings)  # one required file still missing
    (folder / "unet" / "config.json").write_text("{}")
    assert resolve(spec, settings).path == folder


def test_local_path_relative_to_models_dir(settings):
    spec = ModelSpec(id="ckpt", capability="counterfactual", kind="pt", source="local",
                     location="rcsb/x", files=("latest.pt",), how_to_get="ask the authors")
    with pytest.raises(ModelMissingError, match="ask the authors"):
        resolve(spec, settings)
    (settings.models_dir / "rcsb/x").mkdir(parents=True)
    (settings.models_dir / "rcsb/x/latest.pt").write_bytes(b"0")
    assert resolve(spec, settings).where == "local path"


def test_registry_lookup_and_duplicates(settings):
    spec, _ = make_asset(settings)
    reg = ModelRegistry([spec])
    assert "tiny" in reg and reg.get("tiny") is spec and reg.defaults() == [spec]
    with pytest.raises(ValueError, match="twice"):
        reg.register(spec)
    with pytest.raises(InputError, match="Unknown model 'nope'.*tiny"):
        reg.get("nope")


def test_verify_checksums_reports_missing_file(tmp_path):
    assert verify_checksums(tmp_path, {"a.bin": "0" * 64}) == [f"a.bin is missing from {tmp_path}"]


def test_default_registry_collects_every_capability_models_module():
    reg = default_registry()
    assert len(reg) >= 1
    for spec in reg:
        assert spec.capability in CAPABILITIES
        assert spec.license and spec.license != "unknown"
        assert spec.files, f"{spec.id} lists no files, so presence cannot be checked"


def test_status_table_rows_match_headers(settings):
    spec, _ = make_asset(settings)
    rows = status_table(ModelRegistry([spec]), settings)
    assert rows[0][0] == "tiny" and rows[0][4] == "yes"


def test_a_model_shipped_in_a_python_package_resolves_and_is_verified(settings, tmp_path, monkeypatch):
    package = tmp_path / "site" / "tiny_model_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "model.gguf").write_bytes(b"weights")
    monkeypatch.syspath_prepend(str(package.parent))
    digest = hashlib.sha256(b"weights").hexdigest()
    spec = ModelSpec(id="pkg", capability="games", kind="test", source="package", location="tiny_model_pkg",
                     files=("model.gguf",), sha256={"model.gguf": digest})
    found = resolve(spec, settings)
    assert found.path == package and found.where == "python package tiny_model_pkg"
    (package / "model.gguf").write_bytes(b"weightz")
    with pytest.raises(ModelCorruptError, match="sha256"):
        resolve(spec, settings)


def test_a_missing_python_package_names_make_setup(settings):
    spec = ModelSpec(id="gone", capability="games", kind="test", source="package", location="no_such_model_pkg",
                     files=("model.gguf",), sha256={"model.gguf": "0" * 64})
    with pytest.raises(ModelMissingError, match="make setup"):
        resolve(spec, settings)


def test_the_embedded_llm_is_registered_and_present():
    st = default_registry().status("smollm2-135m-instruct")
    assert st.present, st.problem
