"""Further training of the shipped 3D Layout model: a decoder-only VAE fine-tune keeps the latent space,
and the UNet phase continues from the exported weights (``--init-from``) with its history recorded."""

import json

import torch

from backends.common.registry import default_registry


def test_a_frozen_encoder_keeps_latents_and_scaling_while_the_decoder_learns(tmp_path):
    from diffusers import AutoencoderKL

    from backends.layout3d import networks as N
    from training.latent_vae import train_vae

    src = tmp_path / "src"
    vae = N.build_vae(block_out_channels=(4, 8, 8), norm_num_groups=2)
    vae.register_to_config(scaling_factor=0.5)
    vae.save_pretrained(src)
    images = torch.rand(8, 3, 64, 64, generator=torch.Generator().manual_seed(0)) * 2 - 1
    info = train_vae(lambda: AutoencoderKL.from_pretrained(src), images, tmp_path / "run", hours=1.0, batch=4, lr=1e-2,
                     kl_weight=1e-4, seed=0, checkpoint_minutes=60, resume=False, max_steps=3, freeze_encoder=True)
    out = AutoencoderKL.from_pretrained(tmp_path / "run" / "model")
    before, after = vae.state_dict(), out.state_dict()
    for name, value in before.items():
        same = torch.equal(value, after[name])
        assert same == name.startswith(("encoder.", "quant_conv.")), name
    assert out.config.scaling_factor == 0.5 and info["latent_std"] == 2.0 and info["steps"] == 3


def test_the_unet_phase_continues_the_shipped_model(tmp_path):
    from diffusers import UNet2DConditionModel

    from training.layout3d_model import main

    asset = default_registry().resolve("layout3d-embedded").path
    shipped = json.loads((asset / "training.json").read_text())["unet"]
    # a fixed step count (--hours is only an upper bound here), so what is checked does not depend on the load
    main(["--phase", "unet", "--init-from", str(asset), "--limit", "8", "--batch", "2", "--hours", "1",
          "--max-steps", "2", "--lr", "1e-5", "--threads", "1", "--checkpoint-minutes", "60",
          "--data-dir", str(tmp_path / "data"), "--run-dir", str(tmp_path / "run")])
    info = json.loads((tmp_path / "run" / "unet" / "info.json").read_text())
    assert info["steps"] == 2 and info["warm_start"] == shipped
    assert info["total_steps"] == shipped.get("total_steps", shipped["steps"]) + info["steps"]
    ema = UNet2DConditionModel.from_pretrained(tmp_path / "run" / "unet" / "model" / "unet").state_dict()
    ref = UNet2DConditionModel.from_pretrained(asset / "unet").float().state_dict()
    # the EMA goes on at the decay it had reached (~0.999), so a few tiny steps barely move it
    drift = max(float((ema[k] - ref[k]).abs().max()) for k in ref)
    assert drift < 1e-3


def test_crowded_scenes_are_three_objects_one_in_front_of_another():
    import numpy as np

    from backends.layout3d.data import (
        CROWDED_MIN_RECT_OVERLAP,
        crowded_scene,
        make_crowded_sample,
        screen_overlap,
    )

    for seed in range(6):
        scene = crowded_scene(np.random.default_rng(seed))
        assert len(scene.objects) == 3 and screen_overlap(scene) >= CROWDED_MIN_RECT_OVERLAP
    sample = make_crowded_sample(2_000_000)
    assert sample.image.shape == (64, 64, 3) and sample.kind in ("object", "layout") and sample.prompt


def test_the_unet_phase_mixes_in_crowded_scenes(tmp_path):
    from training.layout3d_model import main

    asset = default_registry().resolve("layout3d-embedded").path
    main(["--phase", "unet", "--init-from", str(asset), "--limit", "4", "--batch", "4", "--hours", "1",
          "--max-steps", "1", "--lr", "1e-5", "--threads", "1", "--checkpoint-minutes", "60", "--crowded-p", "0.5",
          "--data-dir", str(tmp_path / "data"), "--run-dir", str(tmp_path / "run")])
    info = json.loads((tmp_path / "run" / "unet" / "info.json").read_text())
    assert info["steps"] == 1 and info["crowded_p"] == 0.5
    assert (tmp_path / "data" / "layout3d_crowded_4.npz").exists()
    assert (tmp_path / "run" / "unet" / "latents_crowded_4.pt").exists()
