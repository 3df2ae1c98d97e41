"""RCSBPipeline: fast tests in the diffusers manner on tiny (4, 8) configs, and the embedded models' round trip.

Laid out as diffusers' ``PipelineTesterMixin`` tests are: ``get_dummy_components`` (tiny random
models of the real classes) and ``get_dummy_inputs`` (a few seeded steps), then one test per promise
of a pipeline — a seeded expected slice, batch = single, a second dtype, save/load, callbacks.
"""

import json

import numpy as np
import pytest
import torch

from backends.counterfactual.pipeline import RCSBOutput, RCSBPipeline

from .conftest import dummy_components


def _region(size=16):
    m = torch.zeros(1, 1, size, size)
    m[..., 4:12, 5:11] = 1
    return m


def _image(seed=1, size=16):
    return torch.rand(1, 3, size, size, generator=torch.Generator().manual_seed(seed)) * 2 - 1


class TestRCSBPipelineFast:
    pipeline_class = RCSBPipeline
    params = ("image", "mask", "target", "guidance_scale", "num_inference_steps")
    batch_params = ("image", "mask")

    def get_dummy_components(self):
        return dummy_components()

    def get_dummy_inputs(self, seed=0):
        return dict(image=_image(), mask=_region(), target=3, num_inference_steps=4, start_fraction=0.6,
                    guidance_scale=1.5, generator=torch.Generator().manual_seed(seed), output_type="np")

    def get_pipe(self):
        pipe = self.pipeline_class(**self.get_dummy_components())
        pipe.set_progress_bar_config(disable=True)
        return pipe

    def test_inference_expected_slice(self):
        out = self.get_pipe()(**self.get_dummy_inputs())
        assert isinstance(out, RCSBOutput) and out.images.shape == (1, 16, 16, 3)
        got = out.images[0, 8:11, 6:9, -1].flatten()  # inside the region
        expected = np.array([0.53, 0.4577, 0.5726, 1.0, 0.1301, 0.3982, 0.0, 0.6917, 0.3365])
        assert np.abs(got - expected).max() < 1e-3, got.round(4).tolist()

    def test_outside_the_region_is_the_input_bit_for_bit(self):
        inputs = {**self.get_dummy_inputs(), "output_type": "pt"}
        out = self.get_pipe()(**inputs).images
        outside = (inputs["mask"] == 0).expand_as(out)
        assert torch.equal(out[outside], inputs["image"][outside])
        assert not torch.equal(out[~outside], inputs["image"][~outside])

    def test_return_dict_false_gives_a_tuple(self):
        images, x1 = self.get_pipe()(**self.get_dummy_inputs(), return_dict=False)
        assert images.shape == (1, 16, 16, 3) and x1.shape == (1, 3, 16, 16)

    def test_batch_matches_single(self):
        pipe = self.get_pipe()
        inputs = self.get_dummy_inputs()
        single = pipe(**inputs).images
        batched = pipe(**{**inputs, "image": torch.cat([_image(1), _image(2)]),
                          "generator": [torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)]}).images
        assert batched.shape == (2, 16, 16, 3)
        assert np.abs(batched[0] - single[0]).max() < 1e-4
        assert np.abs(batched[1] - single[0]).max() > 1e-2

    def test_float32_vs_bfloat16(self):
        pipe = self.get_pipe()
        ref = pipe(**self.get_dummy_inputs()).images
        inputs = {**self.get_dummy_inputs(), "image": _image().to(torch.bfloat16)}
        low = pipe.to(torch.bfloat16)(**inputs).images
        assert pipe.bridge.dtype == torch.bfloat16 and pipe.classifier.dtype == torch.bfloat16
        # the guidance's Adam ratio amplifies rounding in a few pixels: bounded everywhere, tiny on average
        assert np.abs(low - ref).max() < 0.15 and np.abs(low - ref).mean() < 5e-3

    def test_save_load_round_trip(self, tmp_path):
        pipe = self.get_pipe()
        pipe.save_pretrained(tmp_path)
        index = json.loads((tmp_path / "model_index.json").read_text())
        assert index["bridge"] == ["backends.counterfactual.networks", "BridgeDenoiser"]
        assert index["classifier"] == ["backends.counterfactual.networks", "ShapeClassifier"]
        assert index["scheduler"] == ["backends.counterfactual.schedule", "BridgeSchedule"]
        loaded = self.pipeline_class.from_pretrained(tmp_path)
        loaded.set_progress_bar_config(disable=True)
        assert loaded.scheduler.num_steps == 100
        a, b = pipe(**self.get_dummy_inputs()).images, loaded(**self.get_dummy_inputs()).images
        assert np.abs(a - b).max() < 1e-5

    def test_callback_gets_the_documented_tensors(self):
        pipe = self.get_pipe()
        seen = []

        def callback(p, i, t, kwargs):
            assert p is pipe
            seen.append((i, int(t), sorted(kwargs)))
            assert kwargs["latents"].shape == kwargs["pred_original_sample"].shape == kwargs["x1"].shape
            assert kwargs["mask"].shape == (1, 1, 16, 16)
            return {}

        names = pipe._callback_tensor_inputs
        pipe(**self.get_dummy_inputs(), callback_on_step_end=callback, callback_on_step_end_tensor_inputs=names)
        assert [s[0] for s in seen] == [0, 1, 2, 3] and all(s[2] == sorted(names) for s in seen)
        assert [s[1] for s in seen] == pipe.scheduler.timesteps[:-1].tolist()  # the bridge step of each call
        with pytest.raises(ValueError, match="callback_on_step_end_tensor_inputs"):
            pipe(**self.get_dummy_inputs(), callback_on_step_end=callback, callback_on_step_end_tensor_inputs=["eps"])

    def test_callback_can_replace_latents_inside_the_region_only(self):
        pipe = self.get_pipe()
        inputs = {**self.get_dummy_inputs(), "output_type": "pt"}

        def zero_after_last(p, i, t, kwargs):
            return {"latents": torch.zeros_like(kwargs["latents"])} if i == 3 else {}

        out = pipe(**inputs, callback_on_step_end=zero_after_last).images
        inside = (inputs["mask"] == 1).expand_as(out)
        assert torch.equal(out[inside], torch.zeros_like(out[inside]))
        assert torch.equal(out[~inside], inputs["image"][~inside])

    def test_interrupt_ends_after_the_step(self):
        pipe = self.get_pipe()
        calls = []

        def stop(p, i, t, kwargs):
            calls.append(i)
            p._interrupt = True
            return {}

        out = pipe(**self.get_dummy_inputs(), callback_on_step_end=stop)
        assert calls == [0] and out.images.shape == (1, 16, 16, 3)


def test_embedded_models_round_trip_through_save_pretrained(tmp_path):
    """The shipped bridge and classifier saved as one pipeline folder and loaded back, same counterfactual."""
    from backends.counterfactual.service import load_models

    pipe = load_models().pipeline
    pipe.save_pretrained(tmp_path)
    assert (tmp_path / "bridge" / "diffusion_pytorch_model.safetensors").is_file()
    assert (tmp_path / "classifier" / "model.safetensors").is_file()
    loaded = RCSBPipeline.from_pretrained(tmp_path)
    loaded.set_progress_bar_config(disable=True)
    x, m = _image(size=32), torch.zeros(1, 1, 32, 32)
    m[..., 8:24, 8:24] = 1
    kw = dict(target=1, num_inference_steps=3, output_type="pt")
    a = pipe(x, m, generator=torch.Generator().manual_seed(0), **kw).images
    b = loaded(x, m, generator=torch.Generator().manual_seed(0), **kw).images
    assert torch.equal(a, b)


def test_service_streams_previews_through_the_callback_and_stops_within_a_step():
    from backends.common.errors import Cancelled
    from backends.common.progress import CancelToken, ProgressEvent
    from backends.counterfactual.data import CLASSES
    from backends.counterfactual.service import CounterfactualRequest, Models, generate

    pipe = RCSBPipeline(**dummy_components())
    pipe.set_progress_bar_config(disable=True)
    models = Models(pipe, "tiny-bridge", "tiny-classifier", torch.device("cpu"), 16, tuple(CLASSES))
    image = (np.random.default_rng(0).random((16, 16, 3)) * 255).astype(np.uint8)
    mask = np.zeros((16, 16), bool)
    mask[4:12, 4:12] = True
    request = CounterfactualRequest(image, mask, CLASSES[1], num_samples=1, num_inference_steps=6, preview_every=2)
    events = [e for e in generate(request, models=models) if isinstance(e, ProgressEvent)]
    steps = [e for e in events if "bridge step" in e.message]
    assert [e.message for e in steps] == [f"bridge step {k}/6" for k in range(1, 7)]
    assert [e.preview is not None for e in steps] == [False, True, False, True, False, True]
    assert steps[1].preview.shape == (1, 16, 16, 3)

    token, seen = CancelToken(), []
    with pytest.raises(Cancelled):
        for e in generate(request, token, models):
            seen.append(e)
            if "bridge step 2/" in e.message:
                token.cancel()
    # stopped at the next step: at most the two queued steps and the one waiting to be queued came after it
    assert len([e for e in seen if "bridge step" in e.message]) <= 5
