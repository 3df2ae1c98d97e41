"""BuildAScenePipeline: fast tests in the diffusers manner on tiny (4, 8) configs, then the stage logic.

Laid out as diffusers' ``PipelineTesterMixin`` tests are: ``get_dummy_components`` (tiny random
models of the real classes) and ``get_dummy_inputs`` (two seeded steps), then one test per promise
of a pipeline — a seeded expected slice, batch = single, a second dtype, save/load, callbacks.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from backends.layout3d.attention import DSAConfig
from backends.layout3d.pipeline import BuildASceneOutput, BuildAScenePipeline

from .conftest import dummy_components, tiny_pipeline


def _depth(size=32):
    d = torch.zeros(1, 1, size, size)
    d[..., size // 2:, :] = torch.linspace(0.2, 1, size - size // 2)[:, None]
    d[..., 10:20, 8:16] = 0.9
    return d


def _box(size=32):
    m = torch.zeros(1, 1, size, size)
    m[..., 8:22, 14:26] = 1
    return m


class TestBuildAScenePipelineFast:
    pipeline_class = BuildAScenePipeline
    params = ("prompt", "depth", "guidance_scale", "num_inference_steps")
    batch_params = ("prompt", "depth")

    def get_dummy_components(self, controlnet=False):
        return dummy_components(controlnet)

    def get_dummy_inputs(self, seed=0):
        return dict(prompt="a red cube in a dark studio with a black floor", depth=_depth(),
                    generator=torch.Generator().manual_seed(seed), num_inference_steps=2, guidance_scale=6.0,
                    output_type="np")

    def get_pipe(self, controlnet=False):
        pipe = self.pipeline_class(**self.get_dummy_components(controlnet))
        pipe.set_progress_bar_config(disable=True)
        return pipe

    def test_inference_expected_slice(self):
        out = self.get_pipe()(**self.get_dummy_inputs())
        assert isinstance(out, BuildASceneOutput)
        assert out.images.shape == (1, 32, 32, 3) and out.latents.shape == (1, 4, 16, 16)
        expected = np.array([0.6859, 0.3722, 0.514, 0.5624, 0.7129, 0.4921, 0.3765, 0.4183, 0.4392])
        got = out.images[0, -3:, -3:, -1].flatten()
        assert np.abs(got - expected).max() < 1e-3, got.round(4).tolist()

    def test_controlnet_expected_slice_and_depth_matters(self):
        pipe = self.get_pipe(controlnet=True)
        out = pipe(**self.get_dummy_inputs()).images
        expected = np.array([0.7066, 0.4519, 0.5432, 0.5381, 0.6657, 0.4675, 0.3717, 0.396, 0.4312])
        got = out[0, -3:, -3:, -1].flatten()
        assert np.abs(got - expected).max() < 1e-3, got.round(4).tolist()
        flat = pipe(**{**self.get_dummy_inputs(), "depth": torch.zeros(1, 1, 32, 32)}).images
        assert np.abs(out - flat).max() > 1e-3  # the ControlNet's depth reaches the output

    def test_return_dict_false_gives_a_tuple(self):
        images, latents, cache = self.get_pipe()(**self.get_dummy_inputs(), return_dict=False)
        assert images.shape == (1, 32, 32, 3) and latents.shape == (1, 4, 16, 16) and len(cache.latents) == 3

    def test_batch_matches_single(self):
        pipe = self.get_pipe()
        inputs = self.get_dummy_inputs()
        single = pipe(**inputs).images
        batched = pipe(**{**inputs, "prompt": [inputs["prompt"], "a blue sphere in a sunny beach with white sand"],
                          "generator": [torch.Generator().manual_seed(0), torch.Generator().manual_seed(1)]}).images
        assert batched.shape == (2, 32, 32, 3)
        assert np.abs(batched[0] - single[0]).max() < 1e-4
        assert np.abs(batched[1] - single[0]).max() > 1e-3

    def test_float32_vs_bfloat16(self):
        pipe = self.get_pipe()
        ref = pipe(**self.get_dummy_inputs()).images
        low = pipe.to(torch.bfloat16)(**self.get_dummy_inputs()).images
        assert pipe.unet.dtype == torch.bfloat16
        assert np.abs(low - ref).max() < 3e-2

    def test_save_load_round_trip(self, tmp_path):
        pipe = self.get_pipe()
        pipe.save_pretrained(tmp_path)
        assert (tmp_path / "model_index.json").is_file()
        loaded = self.pipeline_class.from_pretrained(tmp_path)
        loaded.set_progress_bar_config(disable=True)
        assert loaded.controlnet is None and loaded.config.prompt_prefix == ""
        a, b = pipe(**self.get_dummy_inputs()).images, loaded(**self.get_dummy_inputs()).images
        assert np.abs(a - b).max() < 1e-5

    def test_save_load_round_trip_with_controlnet(self, tmp_path):
        pipe = self.pipeline_class(**self.get_dummy_components(controlnet=True), prompt_prefix="4k, ")
        pipe.set_progress_bar_config(disable=True)
        pipe.save_pretrained(tmp_path)
        loaded = self.pipeline_class.from_pretrained(tmp_path)
        loaded.set_progress_bar_config(disable=True)
        assert loaded.config.prompt_prefix == "4k, " and loaded.controlnet is not None
        a, b = pipe(**self.get_dummy_inputs()).images, loaded(**self.get_dummy_inputs()).images
        assert np.abs(a - b).max() < 1e-5

    def test_callback_gets_the_documented_tensors(self):
        pipe = self.get_pipe()
        seen = []

        def callback(p, i, t, kwargs):
            assert p is pipe
            seen.append((i, int(t), sorted(kwargs)))
            assert kwargs["latents"].shape == kwargs["pred_original_sample"].shape == (1, 4, 16, 16)
            return {}

        names = pipe._callback_tensor_inputs
        pipe(**self.get_dummy_inputs(), callback_on_step_end=callback, callback_on_step_end_tensor_inputs=names)
        assert [s[0] for s in seen] == [0, 1] and all(s[2] == sorted(names) for s in seen)
        assert [s[1] for s in seen] == pipe.scheduler.timesteps.tolist()
        with pytest.raises(ValueError, match="callback_on_step_end_tensor_inputs"):
            pipe(**self.get_dummy_inputs(), callback_on_step_end=callback,
                 callback_on_step_end_tensor_inputs=["not_a_tensor"])

    def test_callback_can_replace_latents(self):
        pipe = self.get_pipe()

        def zero_after_last(p, i, t, kwargs):
            return {"latents": torch.zeros_like(kwargs["latents"])} if i == 1 else {}

        out = pipe(**self.get_dummy_inputs(), callback_on_step_end=zero_after_last)
        assert torch.equal(out.latents, torch.zeros(1, 4, 16, 16))
        zero_image = pipe.vae.decode(torch.zeros(1, 4, 16, 16)).sample
        expected = pipe.image_processor.postprocess(zero_image, output_type="np")
        assert np.abs(out.images - expected).max() < 1e-5

    def test_interrupt_ends_the_call_without_a_cache(self):
        pipe = self.get_pipe()

        def stop(p, i, t, kwargs):
            p._interrupt = True
            return {}

        out = pipe(**{**self.get_dummy_inputs(), "num_inference_steps": 4}, callback_on_step_end=stop)
        assert out.cache is None and out.images.shape == (1, 32, 32, 3)


# --- the stage machinery behind __call__ --------------------------------------------------------

def _noise(pipe, seed):
    return pipe.prepare_latents(1, 32, 32, torch.Generator().manual_seed(seed))


def test_stage_blends_the_source_outside_the_box_for_the_first_90_percent(tiny):
    noise = _noise(tiny, 0)
    src = tiny("a green lawn under a pale blue sky", _depth(), num_inference_steps=10, guidance_scale=2.0,
               latents=noise)
    out = tiny("a red cube", _depth(), num_inference_steps=10, guidance_scale=2.0, latents=noise, source=src.cache,
               box_mask=_box())
    keep = F.interpolate(1 - _box(), size=noise.shape[-2:], mode="bilinear") == 1  # fully outside the box
    for i in range(9):  # int(0.9 * 10) blended steps
        a, b = out.cache.latents[i], src.cache.latents[i]
        assert torch.allclose(a[keep.expand_as(a)], b[keep.expand_as(b)], atol=1e-6), i
    inside = ~keep.expand_as(out.latents)
    assert not torch.allclose(out.latents[inside], src.cache.final[inside], atol=1e-3)


def test_every_stage_starts_from_the_same_noise(tiny):
    a = _noise(tiny, 7)
    assert torch.equal(a, _noise(tiny, 7)) and not torch.equal(a, _noise(tiny, 8))
    out = tiny("a red cube", _depth(), num_inference_steps=3, latents=a)
    assert torch.equal(out.cache.latents[0], a)


def test_cached_keys_values_reproduce_the_recomputed_source(tiny):
    noise = _noise(tiny, 1)
    src = tiny("a dark studio with a black floor", _depth(), num_inference_steps=6, guidance_scale=3.0, latents=noise)
    kw = dict(num_inference_steps=6, guidance_scale=3.0, latents=noise, source=src.cache, box_mask=_box())
    cached = tiny("a blue sphere", _depth(), source_kv="cache", **kw)
    recomputed = tiny("a blue sphere", _depth(), source_kv="recompute", **kw)
    assert torch.allclose(cached.latents, recomputed.latents, atol=1e-4)
    # and the second stage records its own keys/values for the stage after it
    assert len(cached.cache.kv) == len(recomputed.cache.kv) > 0


def test_methods_differ_and_previews_stream(tiny):
    noise = _noise(tiny, 2)
    src = tiny("a green lawn under a pale blue sky", _depth(), num_inference_steps=4, guidance_scale=2.0,
               latents=noise)
    outs = {}
    for mode in ("dsa", "mutual", "blend"):
        steps = []
        out = tiny("a red cube", _depth(), num_inference_steps=4, guidance_scale=2.0, latents=noise,
                   source=src.cache, box_mask=_box(), mode=mode,
                   callback_on_step_end=lambda p, i, t, kw, seen=steps: seen.append(i) or {})
        assert steps == [0, 1, 2, 3]
        outs[mode] = out.latents
    assert not torch.allclose(outs["dsa"], outs["mutual"]) and not torch.allclose(outs["dsa"], outs["blend"])


def test_a_stage_with_a_source_runs_one_scene_at_a_time(tiny):
    src = tiny("a green lawn", _depth(), num_inference_steps=2, latents=_noise(tiny, 0))
    with pytest.raises(ValueError, match="one scene at a time"):
        tiny(["a red cube", "a blue cube"], _depth(), num_inference_steps=2, source=src.cache, box_mask=_box())


def test_controlnet_stage_keeps_the_source_outside_the_box():
    pipe = tiny_pipeline(controlnet=True)
    noise = _noise(pipe, 0)
    src = pipe("a green lawn", _depth(), num_inference_steps=4, guidance_scale=2.0, latents=noise)
    out = pipe("a red cube", _depth(), num_inference_steps=4, guidance_scale=2.0, latents=noise, source=src.cache,
               box_mask=_box(), blend_fraction=1.0)
    keep = (F.interpolate(1 - _box(), size=noise.shape[-2:], mode="bilinear") == 1).expand_as(out.latents)
    assert torch.allclose(out.cache.latents[3][keep], src.cache.latents[3][keep], atol=1e-6)
    assert not torch.allclose(out.latents[~keep], src.latents[~keep], atol=1e-3)


def test_inversion_is_aligned_with_the_sampling_steps(tiny):
    image = (np.random.default_rng(0).random((32, 32, 3)) * 255).astype(np.uint8)
    seen = []
    lat = tiny.invert(image, "a red cube", _depth(), num_inference_steps=5,
                      callback_on_step_end=lambda p, j, t, kw: seen.append(j))
    assert len(lat) == 6 and seen == [0, 1, 2, 3, 4]
    assert torch.allclose(lat[-1], tiny.encode(image))
    # noisier latents for earlier sampling steps
    stds = [float(x.std()) for x in lat]
    assert stds[0] != stds[-1]


def test_low_resolution_self_attention_blending_takes_effect(tiny):
    noise = _noise(tiny, 4)
    src = tiny("a green lawn", _depth(), num_inference_steps=4, guidance_scale=2.0, latents=noise)
    kw = dict(num_inference_steps=4, guidance_scale=2.0, latents=noise, source=src.cache, box_mask=_box())
    plain = tiny("a red cube", _depth(), dsa=DSAConfig(), **kw)
    blended = tiny("a red cube", _depth(), dsa=DSAConfig(blend_sattn=True, blend_below=1.01), **kw)
    assert not torch.allclose(plain.latents, blended.latents)
