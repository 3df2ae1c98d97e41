"""The Text in Image loader takes the published SDXL, SD3 medium and IF stage I checkpoints as the authors' classes
write them, and the presets' layers exist in those full-size architectures.

Fixtures: ``training/published_formats/diffusers_models.py``. Everything is built on the meta device.
"""

import json
import math

import pytest

from backends.common.published_build import CONFIGS
from backends.common.published_formats import compare_format, read_fixture
from backends.common.registry import fp16_variant
from backends.textedit.attention import find_layers, text_layers
from backends.textedit.models import PRESETS, SPECS
from backends.textedit.published import PUBLISHED_MODELS, build_denoiser, expected_format, loaded_components

SPEC = {s.id: s for s in SPECS}
SOURCES = json.loads((CONFIGS / "SOURCES.json").read_text())["repos"]
SD3_T5 = CONFIGS / "stabilityai/stable-diffusion-3-medium-diffusers/text_encoder_3"


@pytest.mark.parametrize("model_id", PUBLISHED_MODELS)
def test_loader_takes_every_published_tensor_and_nothing_else(model_id):
    published = read_fixture(model_id)
    expected = expected_format(model_id)
    assert sorted(expected) == sorted(published.components)
    result = compare_format(published, expected)
    assert not any(result.values()), {c: r.summary() for c, r in result.items()}


def test_each_component_is_the_class_the_repo_names():
    import diffusers
    import transformers

    for model_id in PUBLISHED_MODELS:
        index = json.loads((CONFIGS / SPEC[model_id].location / "model_index.json").read_text())
        for name, cls in loaded_components(model_id).items():
            library, published = index[name]
            assert issubclass(getattr({"diffusers": diffusers, "transformers": transformers}[library], published), cls)


def test_sd3_t5_names_are_its_published_index():
    """The one published key list here: SD3's ``text_encoder_3/model.safetensors.index.json``."""
    index = json.loads((SD3_T5 / "model.safetensors.index.json").read_text())
    names = read_fixture("sd3-medium").components["text_encoder_3"]
    assert set(index["weight_map"]) == set(names)  # 219: shared.weight kept, its tied copy not
    # stored as fp16: 2 bytes per parameter, so the plain files are already the half-size download
    assert index["metadata"]["total_size"] == 2 * sum(math.prod(s) for s in names.values())


def test_sdxl_preset_layers_exist_at_full_size():
    layers = text_layers(build_denoiser("sdxl-base"))
    preset = PRESETS["sdxl-base"]
    found = find_layers(layers, preset.edit_layers + preset.toxic_layers)
    assert {layer.name for layer in found} == set(preset.edit_layers + preset.toxic_layers)
    assert {layer.kind for layer in found} == {"cross"} and len(layers) == 70


def test_sd3_preset_layer_exists_at_full_size():
    layers = text_layers(build_denoiser("sd3-medium"))
    (layer,) = find_layers(layers, PRESETS["sd3-medium"].edit_layers)
    assert layer.name == "transformer_blocks.10.attn" and layer.kind == "joint" and len(layers) == 24


def test_if_stage1_has_22_added_kv_attentions_and_attention_17():
    unet = build_denoiser("if-stage1")
    assert sum(p.numel() for p in unet.parameters()) == 4_304_695_110  # the model card's 4.3B
    layers = text_layers(unet)
    assert len(layers) == 22 and {layer.kind for layer in layers} == {"added_kv"}
    (layer,) = find_layers(layers, PRESETS["if-stage1"].edit_layers)
    assert layer.index == 17 and layer.name == "up_blocks.1.attentions.3"


@pytest.mark.parametrize("model_id", ["sdxl-base", "sd3-medium"])
def test_spec_configs_and_tokenizers_are_files_of_the_published_repo(model_id):
    spec = SPEC[model_id]
    listed = set(SOURCES[spec.location]["published_files"])
    assert {f for f in spec.files if not f.endswith(".safetensors")} <= listed


@pytest.mark.parametrize("model_id", PUBLISHED_MODELS)
def test_spec_weights_are_named_as_the_libraries_save_them(model_id):
    from diffusers.utils import SAFETENSORS_WEIGHTS_NAME
    from transformers.utils import SAFE_WEIGHTS_INDEX_NAME, SAFE_WEIGHTS_NAME

    spec = SPEC[model_id]
    for name, cls in loaded_components(model_id).items():
        in_folder = {f.split("/", 1)[1] for f in spec.files if f.startswith(name + "/") and "config.json" not in f}
        if cls.__module__.startswith("diffusers"):
            assert in_folder == {SAFETENSORS_WEIGHTS_NAME}, name
        elif SAFE_WEIGHTS_INDEX_NAME in in_folder:  # sharded T5: index + model-0000k-of-0000n
            shards = in_folder - {SAFE_WEIGHTS_INDEX_NAME}
            assert shards == {f"model-{k:05d}-of-{len(shards):05d}.safetensors" for k in range(1, len(shards) + 1)}
        else:
            assert in_folder == {SAFE_WEIGHTS_NAME}, name


def test_sd3_shards_are_the_published_ones_and_fp16_variant_names_its_fp16_shards():
    spec_shards = {f.split("/")[1] for f in SPEC["sd3-medium"].files if f.startswith("text_encoder_3/model")}
    index = json.loads((SD3_T5 / "model.safetensors.index.json").read_text())
    assert spec_shards == {"model.safetensors.index.json", *index["weight_map"].values()}
    # the repo's fp16 index and the names in it are what registry.fp16_variant makes of the same files
    fp16 = json.loads((SD3_T5 / "model.safetensors.index.fp16.json").read_text())
    assert set(fp16_variant(sorted(spec_shards))) == {"model.safetensors.index.fp16.json", *fp16["weight_map"].values()}


def test_fp16_lists_follow_the_libraries_variant_naming():
    from diffusers.utils import _add_variant as diffusers_variant
    from transformers.modeling_utils import _add_variant as transformers_variant

    for model_id in ("sdxl-base", "if-stage1"):
        spec = SPEC[model_id]
        assert spec.fp16_files == fp16_variant(spec.files)
        for plain, half in zip(spec.files, spec.fp16_files, strict=True):
            base = plain.rsplit("/", 1)[-1]
            if base == "diffusion_pytorch_model.safetensors":
                assert half.endswith(diffusers_variant(base, "fp16"))
            elif base in ("model.safetensors", "model.safetensors.index.json"):
                assert half.endswith(transformers_variant(base, "fp16"))
            elif "-of-" in base:  # transformers names a variant's shards model.fp16-0000k-of-0000n
                stem, shard = base.removesuffix(".safetensors").split("-", 1)
                assert half.endswith(transformers_variant(stem + ".safetensors", "fp16").replace(".safetensors",
                                                                                                  f"-{shard}.safetensors"))
            else:
                assert half == plain
