"""RCSBPipeline: the shared pipeline tester on tiny (4, 8) configs, and the embedded models' round trip."""

import json

import numpy as np
import pytest
import torch

from backends.counterfactual.pipeline import RCSBPipeline
from tests.backends.pipeline_tester import PipelineTesterMixin, to_np

from .conftest import dummy_components


def _region(size=16):
    m = torch.zeros(1, 1, size, size)
    m[..., 4:12, 5:11] = 1
    return m


def _image(seed=1, size=16):
    return torch.rand(1, 3, size, size, generator=torch.Generator().manual_seed(seed)) * 2 - 1


class TestRCSBPipeline(PipelineTesterMixin):
    pipeline_class = RCSBPipeline
    # the default 60 guided bridge steps saturate most pixels of the tiny random bridge at ±1: the slice
    # (green channel, rows 8-11, columns 5-8, inside the region) has 9 of 16 values inside (-1, 1)
    expected_slice = [-0.1487, -0.1266, -0.0083, -0.2056, -0.9918, 1.0, -1.0, 1.0,
                      -0.6551, 0.7595, -1.0, -1.0, -1.0, -0.9257, -0.805, -0.1093]
    # the guidance's Adam ratio amplifies rounding in a few pixels: bounded everywhere, tiny on average
    # (measured 0.123 max, 0.002 mean)
    second_dtype_tolerance = (0.15, 5e-3)

    def get_dummy_components(self, seed=0):
        return dummy_components(seed)

    def get_dummy_inputs(self, seed=0):
        return dict(image=_image(), mask=_region(), target=3, num_inference_steps=4, start_fraction=0.6,
                    guidance_scale=1.5, generator=torch.Generator().manual_seed(seed))

    def get_default_inputs(self, seed=0):
        return dict(image=_image(), mask=_region(), target=3, generator=torch.Generator().manual_seed(seed))

    def get_batch_inputs(self):
        batch = {**self.get_dummy_inputs(), "image": torch.cat([_image(1), _image(2)]),
                 "generator": [torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)]}
        return batch, [self.get_dummy_inputs(), {**self.get_dummy_inputs(), "image": _image(2)}]

    def output_slice(self, array):
        return array[0, 1, 8:12, 5:9].flatten()  # B×3×H×W in [-1, 1]; inside the region

    def callback_timesteps(self, pipe):
        return pipe.scheduler.timesteps[:-1].tolist()  # the bridge step of each call

    def cast_inputs(self, inputs, dtype):
        return {**inputs, "image": inputs["image"].to(dtype)}

    def zeroed_output(self, pipe, inputs):
        return to_np((1 - inputs["mask"]) * inputs["image"])  # zero inside the region, the input outside

    def test_outside_the_region_is_the_input_bit_for_bit(self):
        inputs = self.get_dummy_inputs()
        out = self.run(self.get_pipe(), inputs).images
        outside = (inputs["mask"] == 0).expand_as(out)
        assert torch.equal(out[outside], inputs["image"][outside])
        assert not torch.equal(out[~outside], inputs["image"][~outside])

    def test_model_index_names_the_project_classes(self, tmp_path):
        self.get_pipe().save_pretrained(tmp_path)
        index = json.loads((tmp_path / "model_index.json").read_text())
        assert index["bridge"] == ["backends.counterfactual.networks", "BridgeDenoiser"]
        assert index["classifier"] == ["backends.counterfactual.networks", "ShapeClassifier"]
        assert index["scheduler"] == ["backends.counterfactual.schedule", "BridgeSchedule"]
        assert RCSBPipeline.from_pretrained(tmp_path).scheduler.num_steps == 100


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
