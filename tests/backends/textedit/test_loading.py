"""Loading: the embedded component folders, and the published pipelines' classes (diffusers' SDXL, SD3 and
IF stage I pipelines of tiny random components) patched through the same call as ``TextEditPipeline``."""

import numpy as np
import pytest
import torch

from backends.common.errors import InputError, ModelMissingError
from backends.textedit.loading import PublishedTextPipeline, load_embedded, load_for
from backends.textedit.models import MODEL_CHOICES, PRESETS, SPECS

from .conftest import if_pipeline, sd3_pipeline, sdxl_pipeline, tiny_pipeline

A, B = 'a sign that says "cat"', 'a sign that says "dog"'


def test_embedded_folder_round_trip(tmp_path):
    pipe = tiny_pipeline()
    pipe.save_pretrained(tmp_path)
    loaded = load_embedded(tmp_path, name="tiny")
    kw = dict(num_inference_steps=2, patch_prompt=B, patch_layers=[3])
    a = pipe(A, generator=torch.Generator().manual_seed(0), **kw).images
    b = loaded(A, generator=torch.Generator().manual_seed(0), **kw).images
    assert loaded.name == "tiny" and np.abs(a - b).max() < 1e-6


@pytest.mark.parametrize("build", [sdxl_pipeline, sd3_pipeline, if_pipeline], ids=["sdxl", "sd3", "if"])
def test_published_pipelines_patch_the_named_layers_through_the_same_call(build):
    pipe = PublishedTextPipeline(build(), build.__name__)
    kind = {"sdxl_pipeline": "cross", "sd3_pipeline": "joint", "if_pipeline": "added_kv"}[build.__name__]
    assert pipe.layers and {layer.kind for layer in pipe.layers} == {kind}

    def g():
        return torch.Generator().manual_seed(0)

    kw = dict(num_inference_steps=2, guidance_scale=5.0)
    plain = pipe(A, generator=g(), **kw).images
    assert np.array_equal(plain, pipe(A, generator=g(), **kw).images)  # the generator is copied, not consumed
    target = pipe.layers[1]
    same = pipe(A, patch_prompt=A, patch_layers=[target.name], generator=g(), **kw)
    assert np.array_equal(same.images, plain)
    steps = []
    out = pipe(A, patch_prompt=B, patch_layers=[target.index], generator=g(),
               callback_on_step_end=lambda p, i, t, kw: steps.append((p.phase, i)), **kw)
    assert out.patched_layers == (target.name,) and np.abs(out.images - plain).max() > 1e-4
    assert steps == [("record B", 0), ("record B", 1), ("generate", 0), ("generate", 1)]
    late = pipe(A, patch_prompt=B, patch_layers=[target.name], patch_start_step=2, generator=g(), **kw)
    assert np.array_equal(late.images, plain) and late.patched_layers == ()


def test_presets_name_the_papers_layers():
    assert set(PRESETS) == set(MODEL_CHOICES)
    assert PRESETS["sdxl-base"].edit_layers == ("up_blocks.0.attentions.2.transformer_blocks.1.attn2",
                                                "up_blocks.0.attentions.2.transformer_blocks.2.attn2")
    assert len(PRESETS["sdxl-base"].toxic_layers) == 3 and PRESETS["sdxl-base"].edit_start_step == 4
    assert PRESETS["sd3-medium"].edit_layers == ("transformer_blocks.10.attn",)
    assert PRESETS["sd3-medium"].toxic_start_step == 0 and PRESETS["if-stage1"].edit_layers == ("17",)
    assert {s.id for s in SPECS} >= {"sdxl-base", "sd3-medium", "if-stage1"}


def test_unknown_and_missing_models_are_clear_errors(tmp_path):
    from backends.common.settings import Settings

    with pytest.raises(InputError, match="Unknown Text in Image model 'nope'"):
        load_for("nope")
    with pytest.raises(ModelMissingError, match="if-stage1"):
        load_for("if-stage1", settings=Settings(models_dir=tmp_path, offline=True))
