"""Loading pipeline folders: the embedded layout and the published one (SVD VAE + two RoPE UNets)."""

import numpy as np
import torch
from diffusers import AutoencoderKLTemporalDecoder, FlowMatchEulerDiscreteScheduler

from backends.videodepth.loading import load_folder
from backends.videodepth.networks import SCHEDULER_CONFIG, UNetSpatioTemporalRopeConditionModel
from backends.videodepth.pipeline import VideoDepthPipeline

from .conftest import TINY_UNET, tiny_pipeline, tiny_unet, tiny_video


def test_embedded_layout_round_trip_in_fp16(tmp_path):
    pipe = tiny_pipeline()
    pipe.unet.to(torch.float16)
    pipe.save_pretrained(tmp_path / "m")
    loaded = load_folder(tmp_path / "m", name="tiny")
    assert loaded.unet.dtype == torch.float32 and loaded.name == "tiny" and loaded.unet_interp is None
    pipe.unet.to(torch.float32)
    a = pipe(tiny_video(), num_inference_steps=2, generator=torch.Generator().manual_seed(0)).disparity
    b = loaded(tiny_video(), num_inference_steps=2, generator=torch.Generator().manual_seed(0)).disparity
    assert np.abs(a - b).max() < 2e-2  # fp16 weights


def test_published_layout_loads_and_runs(tmp_path):
    torch.manual_seed(0)
    vae = AutoencoderKLTemporalDecoder(block_out_channels=(32, 64), layers_per_block=1, latent_channels=4,
                                       down_block_types=("DownEncoderBlock2D",) * 2)
    unet = tiny_unet(in_channels=8, out_channels=4)
    interp = tiny_unet(seed=1, in_channels=16, out_channels=4)  # noise, rgb, masked key latents, mask
    VideoDepthPipeline(vae=vae, unet=unet, unet_interp=interp,
                       scheduler=FlowMatchEulerDiscreteScheduler(**SCHEDULER_CONFIG)).save_pretrained(tmp_path / "dav")
    pipe = load_folder(tmp_path / "dav")
    assert isinstance(pipe.vae, AutoencoderKLTemporalDecoder)
    assert isinstance(pipe.unet_interp, UNetSpatioTemporalRopeConditionModel)
    assert pipe.unet_interp.config.in_channels == 16 and pipe.unet.config.block_out_channels == TINY_UNET["block_out_channels"]
    assert pipe.size_multiple == 4
    out = pipe(tiny_video(3, size=16), position_ids=[0, 12, 24], num_inference_steps=1,
               generator=torch.Generator().manual_seed(0))
    assert out.disparity.shape == (3, 16, 16) and out.latents.shape == (1, 3, 4, 8, 8)


def test_prediction_type_survives_saving(tmp_path):
    pipe = tiny_pipeline()
    pipe.register_to_config(prediction_type="sample")
    pipe.save_pretrained(tmp_path / "m")
    assert load_folder(tmp_path / "m").config.prediction_type == "sample"
