"""VideoDepthPipeline: the shared pipeline tester on tiny random components, then the sampler's own
promises: initial-noise modes, RoPE positions, input validation, the Euler step on known fields."""

import numpy as np
import pytest
import torch

from backends.common.errors import InputError
from backends.videodepth.pipeline import VideoDepthPipeline
from tests.backends.pipeline_tester import PipelineTesterMixin

from .conftest import tiny_pipeline, tiny_unet, tiny_video


def run(pipe, seed=0, **kw):
    kw.setdefault("num_inference_steps", 2)
    kw.setdefault("initial_noise", "independent")  # random starts, so the seed matters
    return pipe(tiny_video(), generator=torch.Generator().manual_seed(seed), **kw)


class TestVideoDepthPipeline(PipelineTesterMixin):
    pipeline_class = VideoDepthPipeline
    # the default start is zero (deterministic) with 3 Euler steps
    expected_slice = [0.4788, 0.3594, 0.535, 0.4398, 0.5126, 0.4232, 0.4906, 0.5471, 0.5503]
    # one call estimates one clip, its frames denoised jointly: a batch of clips is refused
    batch_supported = False
    batch_error = (InputError, "Expected a clip of frames F×H×W×3")
    second_dtype_tolerance = (3e-2, 1e-2)  # measured: 0.009 max, 0.002 mean

    def get_dummy_components(self, seed=0):
        from diffusers import FlowMatchEulerDiscreteScheduler

        from backends.videodepth.networks import SCHEDULER_CONFIG, SpaceToDepthCodec

        return dict(vae=SpaceToDepthCodec(3, 4), unet=tiny_unet(seed),
                    scheduler=FlowMatchEulerDiscreteScheduler(**SCHEDULER_CONFIG))

    def get_dummy_inputs(self, seed=0):
        return dict(video=tiny_video(), num_inference_steps=2, initial_noise="independent",
                    generator=torch.Generator().manual_seed(seed))

    def get_default_inputs(self, seed=0):
        return dict(video=tiny_video(), generator=torch.Generator().manual_seed(seed))

    def get_batch_inputs(self):
        return {**self.get_dummy_inputs(), "video": np.stack([tiny_video(seed=0), tiny_video(seed=1)])}, []

    def output_array(self, out):
        return out.disparity  # F×H×W: the clip's frames come first

    def output_slice(self, array):
        return array[-1, -3:, -3:].flatten()

    def zeroed_output(self, pipe, inputs):
        return pipe.decode(torch.zeros(1, 4, 48, 4, 4)).numpy()

    def test_output_shapes_and_the_returned_latents(self):
        pipe = self.get_pipe()
        out = self.run(pipe)
        assert out.disparity.shape == (4, 16, 16) and out.latents.shape == (1, 4, 48, 4, 4)
        assert np.array_equal(pipe.decode(out.latents).numpy(), out.disparity)


def test_seeded_and_noise_dependent():
    pipe = tiny_pipeline()
    a, b, c = run(pipe, 0).disparity, run(pipe, 0).disparity, run(pipe, 1).disparity
    assert np.array_equal(a, b) and not np.allclose(a, c)


def first_noisy_input(pipe, video, **kw) -> torch.Tensor:
    """The disparity-latent half of the UNet's input at the first step (1×F×C×h×w)."""
    seen = []
    hook = pipe.unet.register_forward_pre_hook(lambda m, args: seen.append(args[0].clone()) if not seen else None)
    try:
        pipe(video, num_inference_steps=2, **kw)
    finally:
        hook.remove()
    return seen[0][:, :, : pipe.unet.config.out_channels]


def test_initial_noise_modes():
    pipe, video = tiny_pipeline(), tiny_video(4)
    shared = first_noisy_input(pipe, video, generator=torch.Generator().manual_seed(7), initial_noise="shared")
    assert all(torch.equal(shared[0, i], shared[0, 0]) for i in range(4))  # one map for every frame
    one = first_noisy_input(pipe, video[:1], generator=torch.Generator().manual_seed(7), initial_noise="shared")
    assert torch.equal(one[0, 0], shared[0, 0])  # the same seed gives the same map for any clip length
    indep = first_noisy_input(pipe, video, generator=torch.Generator().manual_seed(7), initial_noise="independent")
    assert not torch.allclose(indep[0, 1], indep[0, 0])
    assert torch.count_nonzero(first_noisy_input(pipe, video)) == 0  # default: deterministic, from zero
    with pytest.raises(InputError):
        pipe(video, initial_noise="pink")


def test_default_is_deterministic_and_steadier_on_a_static_clip():
    """A clip of one repeated frame: the zero and shared starts change far less from frame to frame than
    independent noise (with few steps the temporal layers cannot undo per-frame noise)."""
    pipe = tiny_pipeline()
    static = np.repeat(tiny_video(1), 5, 0)

    def flicker(**kw):
        d = pipe(static, num_inference_steps=2, **kw).disparity
        return float(np.abs(np.diff(d, axis=0)).mean())

    assert np.array_equal(pipe(static).disparity, pipe(static, generator=torch.Generator().manual_seed(1)).disparity)
    indep = flicker(generator=torch.Generator().manual_seed(0), initial_noise="independent")
    assert flicker() < 0.5 * indep
    assert flicker(generator=torch.Generator().manual_seed(0), initial_noise="shared") < 0.5 * indep


def test_true_frame_indices_are_relative():
    pipe = tiny_pipeline()
    sparse = np.array([0, 17, 34, 51])
    a = run(pipe, position_ids=sparse).disparity
    assert np.allclose(a, run(pipe, position_ids=sparse + 300).disparity, atol=1e-4)
    assert not np.allclose(a, run(pipe, position_ids=np.arange(4)).disparity, atol=1e-4)


def test_bad_inputs_are_clear():
    pipe = tiny_pipeline()
    with pytest.raises(InputError, match="multiple of 8"):
        pipe(tiny_video(size=12))
    with pytest.raises(InputError, match="position_ids"):
        pipe(tiny_video(), position_ids=[0, 1])
    with pytest.raises(InputError, match="F×H×W×3"):
        pipe(np.zeros((2, 16, 16, 4), np.uint8))
    with pytest.raises(InputError, match="num_inference_steps"):
        pipe(tiny_video(), num_inference_steps=0)


def constant_field(value):
    """Stands in for the UNet's forward: the same prediction everywhere (a known field for the sampler)."""
    return lambda sample, timestep, position_ids=None: type("O", (), {"sample": value.expand_as(sample[:, :, :48])})


@pytest.mark.parametrize("steps", [1, 3])
def test_euler_sampler_on_known_fields(steps):
    pipe = tiny_pipeline()
    target = torch.randn(1, 4, 48, 4, 4, generator=torch.Generator().manual_seed(5))
    noise = torch.randn(1, 4, 48, 4, 4, generator=torch.Generator().manual_seed(6))
    pipe.unet.forward = constant_field(target)
    # velocity field v ≡ V: Euler from σ = 1 to 0 moves the noise by −V
    out = pipe(tiny_video(), num_inference_steps=steps, latents=noise.clone())
    assert torch.allclose(out.latents, noise - target, atol=1e-5)
    # clean-latent prediction x̂0 ≡ X: every step moves towards X and the last lands on it
    pipe.register_to_config(prediction_type="sample")
    out = pipe(tiny_video(), num_inference_steps=steps, latents=noise.clone())
    assert torch.allclose(out.latents, target, atol=1e-5)
    with pytest.raises(ValueError, match="prediction_type"):
        VideoDepthPipeline(pipe.vae, pipe.unet, pipe.scheduler, prediction_type="epsilon")
