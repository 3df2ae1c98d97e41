"""BuildAScenePipeline: the shared pipeline tester on tiny (4, 8) configs (with and without the ControlNet),
then the stage logic behind ``__call__``."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from backends.layout3d.attention import DSAConfig
from backends.layout3d.pipeline import BuildAScenePipeline
from tests.backends.pipeline_tester import PipelineTesterMixin

from .conftest import dummy_components, tiny_pipeline

PROMPT = "a red cube in a dark studio with a black floor"


def _depth(size=32):
    d = torch.zeros(1, 1, size, size)
    d[..., size // 2:, :] = torch.linspace(0.2, 1, size - size // 2)[:, None]
    d[..., 10:20, 8:16] = 0.9
    return d


def _box(size=32):
    m = torch.zeros(1, 1, size, size)
    m[..., 8:22, 14:26] = 1
    return m


class TestBuildAScenePipeline(PipelineTesterMixin):
    pipeline_class = BuildAScenePipeline
    controlnet = False
    expected_slice = [0.62, 0.3903, 0.4564, 0.6133, 0.7594, 0.4606, 0.3764, 0.4235, 0.4243]
    second_dtype_tolerance = (3e-2, 1e-2)

    def get_dummy_components(self, seed=0):
        return dummy_components(self.controlnet, seed)

    def get_dummy_inputs(self, seed=0):
        return dict(prompt=PROMPT, depth=_depth(), generator=torch.Generator().manual_seed(seed),
                    num_inference_steps=2, guidance_scale=6.0)

    def get_default_inputs(self, seed=0):
        return dict(prompt=PROMPT, depth=_depth(), generator=torch.Generator().manual_seed(seed))

    def get_batch_inputs(self):
        other = "a blue sphere in a sunny beach with white sand"
        batch = {**self.get_dummy_inputs(), "prompt": [PROMPT, other],
                 "generator": [torch.Generator().manual_seed(0), torch.Generator().manual_seed(1)]}
        return batch, [self.get_dummy_inputs(0), {**self.get_dummy_inputs(1), "prompt": other}]

    def zeroed_output(self, pipe, inputs):
        zero = pipe.vae.decode(torch.zeros(1, 4, 16, 16)).sample
        return pipe.image_processor.postprocess(zero, output_type="np")

    def test_output_shapes_and_the_recorded_stage(self):
        out = self.run(self.get_pipe())
        assert out.images.shape == (1, 32, 32, 3) and out.latents.shape == (1, 4, 16, 16)
        assert len(out.cache.latents) == 3  # the two steps' inputs and the final latents

    def test_interrupt_ends_the_call_without_a_cache(self):
        def stop(p, i, t, kwargs):
            p._interrupt = True
            return {}

        out = self.run(self.get_pipe(), num_inference_steps=4, callback_on_step_end=stop)
        assert out.cache is None and out.images.shape == (1, 32, 32, 3)


class _WithControlNet(TestBuildAScenePipeline):
    """The tester's setup with the ControlNet (not collected itself: the checks below run on it)."""

    controlnet = True


class TestBuildASceneControlNet:
    """The ControlNet variant (the published LooseControl layout): its slice at the default settings, the
    depth reaching the output, and the optional component and config surviving save/load."""

    tester = _WithControlNet()
    pipeline_class = BuildAScenePipeline

    def get_pipe(self):
        return self.tester.get_pipe()

    def run(self, pipe, **kw):
        return self.tester.run(pipe, **kw)

    def get_dummy_components(self):
        return self.tester.get_dummy_components()

    def test_expected_slice_at_default_settings(self):
        out = self.tester.run(self.get_pipe(), self.tester.get_default_inputs()).images
        expected = np.array([0.6996, 0.5542, 0.5184, 0.5849, 0.7001, 0.444, 0.3764, 0.4034, 0.4192])
        got = self.tester.output_slice(out)
        assert np.abs(got - expected).max() < 1e-3, got.round(4).tolist()

    def test_the_depth_reaches_the_output(self):
        pipe = self.get_pipe()
        out = self.run(pipe).images
        flat = self.run(pipe, depth=torch.zeros(1, 1, 32, 32)).images
        assert np.abs(out - flat).max() > 1e-3

    def test_save_load_keeps_the_controlnet_and_the_prompt_prefix(self, tmp_path):
        pipe = self.pipeline_class(**self.get_dummy_components(), prompt_prefix="4k, ")
        pipe.set_progress_bar_config(disable=True)
        pipe.save_pretrained(tmp_path)
        loaded = self.pipeline_class.from_pretrained(tmp_path)
        loaded.set_progress_bar_config(disable=True)
        assert loaded.config.prompt_prefix == "4k, " and loaded.controlnet is not None
        assert np.abs(self.run(pipe).images - self.run(loaded).images).max() < 1e-5


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
