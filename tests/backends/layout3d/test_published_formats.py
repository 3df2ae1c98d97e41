"""The 3D Layout loader takes the published SD 1.5 and depth ControlNet checkpoints as the authors' classes write them.

Fixtures: ``training/published_formats/diffusers_models.py`` (diffusers/transformers' classes, the repos'
configs). Everything is built on the meta device: full size, no memory for weights, nothing downloaded.
"""

import json

import pytest

from backends.common.published_build import CONFIGS, build_meta, config_folder, loaded_names
from backends.common.published_formats import compare_format, read_fixture
from backends.common.registry import fp16_variant
from backends.layout3d import loading
from backends.layout3d.models import SPECS
from backends.layout3d.published import COMPONENTS, PUBLISHED_MODELS, expected_format

SPEC = {s.id: s for s in SPECS}


@pytest.mark.parametrize("model_id", PUBLISHED_MODELS)
def test_loader_takes_every_published_tensor_and_nothing_else(model_id):
    published = read_fixture(model_id)
    expected = expected_format(model_id)
    assert sorted(expected) == sorted(published.components)
    result = compare_format(published, expected)
    assert not any(result.values()), {c: r.summary() for c, r in result.items()}


@pytest.mark.parametrize("model_id", sorted(COMPONENTS))
def test_diffusers_fixtures_say_which_repo_and_classes(model_id):
    source = read_fixture(model_id).source
    assert source.startswith(SPEC[model_id].location) and "diffusers" in source


def test_full_size_parameter_counts_are_the_published_models():
    classes = loading.sd_classes()
    sd = SPEC["sd15"].location
    sizes = {c: sum(p.numel() for p in build_meta(classes[c], config_folder(sd, c)).parameters())
             for c in ("unet", "vae", "text_encoder")}
    assert sizes == {"unet": 859_520_964, "vae": 83_653_863, "text_encoder": 123_060_480}
    controlnet = build_meta(classes["controlnet"], config_folder(SPEC["controlnet-sd15-depth"].location))
    assert sum(p.numel() for p in controlnet.parameters()) == 361_279_120


def test_sd15_names_as_written_in_2022_are_renamed_by_the_loader():
    """SD 1.5's files were written by diffusers 0.6.0 and transformers 4.22: other names than today's classes
    save (old VAE attention names, a ``text_model.`` prefix, a saved ``position_ids``); the loader maps them all."""
    published = read_fixture("sd15").components
    assert "encoder.mid_block.attentions.0.query.weight" in published["vae"]
    assert published["text_encoder"]["text_model.embeddings.position_ids"] == (1, 77)
    classes = loading.sd_classes()
    sd = SPEC["sd15"].location
    for comp in ("vae", "text_encoder"):
        today = loaded_names(build_meta(classes[comp], config_folder(sd, comp)))
        assert set(today) != set(published[comp])  # a plain name comparison would fail ...
    assert not any(compare_format(read_fixture("sd15"), expected_format("sd15")).values())  # ... the loader's doesn't


def test_a_loader_built_with_another_class_is_caught(monkeypatch):
    from transformers import CLIPTextModelWithProjection

    classes = loading.sd_classes()
    monkeypatch.setattr(loading, "sd_classes", lambda: {**classes, "text_encoder": CLIPTextModelWithProjection})
    result = compare_format(read_fixture("sd15"), expected_format("sd15"))
    assert result["text_encoder"].unexpected == ["text_projection.weight"] and not result["unet"]


def test_spec_files_are_the_files_the_published_repos_hold():
    from diffusers.utils import SAFETENSORS_WEIGHTS_NAME, _add_variant

    listed = set(json.loads((CONFIGS / "SOURCES.json").read_text())["repos"][SPEC["sd15"].location]["published_files"])
    sd = SPEC["sd15"]
    weights = {f for f in sd.files if f.endswith(".safetensors")}
    assert set(sd.files) - weights <= listed  # configs and tokenizer, as in the published repo
    # one weights file per component the loader reads, named as diffusers / transformers save it
    assert weights == {"unet/diffusion_pytorch_model.safetensors", "vae/diffusion_pytorch_model.safetensors",
                       "text_encoder/model.safetensors"}
    assert set(sd.fp16_files) == set(fp16_variant(sd.files))
    assert "unet/" + _add_variant(SAFETENSORS_WEIGHTS_NAME, "fp16") in sd.fp16_files
    assert "text_encoder/model.fp16.safetensors" in sd.fp16_files
    cn = SPEC["controlnet-sd15-depth"]
    assert cn.files == ("config.json", SAFETENSORS_WEIGHTS_NAME)
    assert cn.fp16_files == ("config.json", _add_variant(SAFETENSORS_WEIGHTS_NAME, "fp16"))
