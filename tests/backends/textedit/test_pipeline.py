"""TextEditPipeline: the shared pipeline tester on tiny (4, 8) configs, then the patching promises.

Patching with the same prompt is bit-identical, patching every layer from step 0 is generating
prompt B, only the named layers are patched, a late start changes nothing, one recording serves
many patched runs.
"""

import numpy as np
import pytest
import torch

from backends.common.errors import InputError
from backends.textedit.pipeline import TextEditPipeline
from tests.backends.pipeline_tester import PipelineTesterMixin

from .conftest import dummy_components, tiny_pipeline

A = 'a sign that says "cat"'
B = 'a sign that says "dog"'


def inputs(seed=0, **kw):
    return dict(prompt=A, generator=torch.Generator().manual_seed(seed), num_inference_steps=2, guidance_scale=5.0,
                output_type="np", **kw)


class TestTextEditPipeline(PipelineTesterMixin):
    pipeline_class = TextEditPipeline
    expected_slice = [0.686, 0.5964, 0.3504, 0.6819, 0.5392, 0.4913, 0.6167, 0.5058, 0.6257]
    second_dtype_tolerance = (3e-2, 1e-2)  # measured: 0.014 max, 0.003 mean

    def get_dummy_components(self, seed=0):
        return dummy_components(seed)

    def get_dummy_inputs(self, seed=0):
        return inputs(seed)

    def get_default_inputs(self, seed=0):
        return dict(prompt=A, generator=torch.Generator().manual_seed(seed))

    def get_batch_inputs(self):
        batch = {**inputs(), "prompt": [A, B],
                 "generator": [torch.Generator().manual_seed(0), torch.Generator().manual_seed(1)]}
        return batch, [inputs(0), {**inputs(1), "prompt": B}]

    def zeroed_output(self, pipe, inputs):
        return pipe.decode(torch.zeros(1, 4, 4, 16))

    def test_output_shapes(self):
        out = self.run(self.get_pipe())
        assert out.images.shape == (1, 8, 32, 3) and out.latents.shape == (1, 4, 4, 16)
        assert out.source_images is None and out.source is None and out.patched_layers == ()


@pytest.fixture(scope="module")
def pipe():
    return tiny_pipeline()


def test_the_prompt_reaches_the_image(pipe):
    a = pipe(**inputs()).images
    b = pipe(**{**inputs(), "prompt": B}).images
    assert np.abs(a - b).max() > 1e-3


def test_batched_patching_matches_single(pipe):
    layers = [pipe.layers[3].name]
    single = pipe(**inputs(patch_prompt=B, patch_layers=layers)).images
    batched = pipe(**{**inputs(patch_prompt=[B, A], patch_layers=layers), "prompt": [A, A],
                      "generator": [torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)]}).images
    assert np.abs(batched[0] - single[0]).max() < 1e-4
    assert np.abs(batched[1] - pipe(**inputs()).images[0]).max() < 1e-4


def test_save_load_keeps_the_layers_and_the_patching(tmp_path, pipe):
    pipe.save_pretrained(tmp_path)
    loaded = TextEditPipeline.from_pretrained(tmp_path)
    loaded.set_progress_bar_config(disable=True)
    assert [layer.name for layer in loaded.layers] == [layer.name for layer in pipe.layers]
    a = pipe(**inputs(patch_prompt=B, patch_layers=[2])).images
    b = loaded(**inputs(patch_prompt=B, patch_layers=[2])).images
    assert np.abs(a - b).max() < 1e-5


def test_callback_sees_every_step_of_both_runs(pipe):
    seen = []

    def cb(p, i, t, kw):
        seen.append((p.phase, p.phase_index, p.num_phases, i, sorted(kw)))
        return {}

    pipe(**inputs(patch_prompt=B, patch_layers=[0]), callback_on_step_end=cb,
         callback_on_step_end_tensor_inputs=["latents", "pred_original_sample"])
    assert [s[:4] for s in seen] == [("record B", 0, 2, 0), ("record B", 0, 2, 1), ("generate", 1, 2, 0),
                                     ("generate", 1, 2, 1)]
    assert all(s[4] == ["latents", "pred_original_sample"] for s in seen)


def test_raising_in_the_callback_stops_the_call_and_leaves_the_pipeline_clean(pipe):
    class Stop(Exception):
        pass

    def stop(p, i, t, kw):
        raise Stop

    with pytest.raises(Stop):
        pipe(**inputs(patch_prompt=B, patch_layers=[1]), callback_on_step_end=stop)
    assert pipe.controller.mode == "plain" and not pipe.controller.cache
    assert np.abs(pipe(**inputs()).images - pipe(**inputs()).images).max() == 0


def test_patching_with_the_same_prompt_is_bit_identical(pipe):
    plain = pipe(**inputs()).images
    for layers in ([0], [3], [layer.name for layer in pipe.layers]):
        out = pipe(**inputs(patch_prompt=A, patch_layers=layers))
        assert np.array_equal(out.images, plain), layers
        assert np.array_equal(out.source_images, plain)


def test_patching_every_layer_from_step_0_is_generating_prompt_b(pipe):
    with_b = pipe(**{**inputs(), "prompt": B}).images
    out = pipe(**inputs(patch_prompt=B, patch_layers=[layer.name for layer in pipe.layers]))
    assert np.array_equal(out.images, with_b) and np.array_equal(out.source_images, with_b)
    assert out.patched_layers == tuple(layer.name for layer in pipe.layers)


def test_only_the_named_layers_are_patched_and_a_late_start_changes_nothing(pipe):
    plain = pipe(**inputs()).images
    out = pipe(**inputs(patch_prompt=B, patch_layers=[pipe.layers[4].name, 1]))
    assert out.patched_layers == (pipe.layers[1].name, pipe.layers[4].name)
    assert np.abs(out.images - plain).max() > 1e-4
    late = pipe(**inputs(patch_prompt=B, patch_layers=[1], patch_start_step=2))
    assert np.array_equal(late.images, plain) and late.patched_layers == ()
    heads = pipe(**inputs(patch_prompt=B, patch_layers=[1], patch_heads={1: [0]})).images
    full = pipe(**inputs(patch_prompt=B, patch_layers=[1])).images
    assert np.abs(heads - full).max() > 1e-5


def test_bad_patch_arguments_are_clear_errors(pipe):
    with pytest.raises(InputError, match="Unknown layer 'nope'"):
        pipe(**inputs(patch_prompt=B, patch_layers=["nope"]))
    with pytest.raises(ValueError, match="patch_start_step"):
        pipe(**inputs(patch_prompt=B, patch_layers=[0], patch_start_step=3))
    with pytest.raises(ValueError, match="2 patch prompts for 1 prompts"):
        pipe(**inputs(patch_prompt=[A, B], patch_layers=[0]))


def test_components_are_the_registered_ones():
    comps = dummy_components()
    pipe = TextEditPipeline(**comps)
    assert set(pipe.components) == {"vae", "text_encoder", "tokenizer", "unet", "scheduler"}
    assert len(pipe.layers) == 7 and not any(p.requires_grad for p in pipe.unet.parameters())


def test_one_recording_serves_many_patched_runs(pipe):
    noise = pipe.prepare_latents(1, 8, 32, torch.Generator().manual_seed(0))
    kw = dict(num_inference_steps=2, guidance_scale=5.0, latents=noise)
    kv = pipe.record(B, **kw)
    assert kv.layers == frozenset(layer.name for layer in pipe.layers) and len(kv.cache) == 2 * len(pipe.layers)
    for layer in (0, 5):
        direct = pipe(A, patch_prompt=B, patch_layers=[layer], **kw)
        reused = pipe(A, patch_source=kv, patch_layers=[layer], **kw)
        assert np.array_equal(direct.images, reused.images)
        assert np.array_equal(direct.source_images, kv.images)
    with pytest.raises(ValueError, match="another batch size, step count or guidance"):
        pipe(A, patch_source=kv, patch_layers=[0], **{**kw, "num_inference_steps": 3})
    part = pipe.record(B, layers=[1], **kw)
    with pytest.raises(ValueError, match="no recording of"):
        pipe(A, patch_source=part, patch_layers=[2], **kw)


def test_the_negative_prompt_is_the_unconditional_branch(pipe):
    plain = pipe(**inputs()).images
    assert np.array_equal(pipe(**inputs(negative_prompt="")).images, plain)
    assert np.abs(pipe(**inputs(negative_prompt='a sign that says "cat"')).images - plain).max() > 1e-4
