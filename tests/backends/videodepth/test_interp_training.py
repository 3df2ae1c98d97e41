"""The interpolation UNet's training: warm start = the main model, a tiny run trains, checkpoints, resumes, exports."""

import json

import numpy as np
import pytest
import torch

from backends.videodepth import networks as N
from backends.videodepth.data import cached_clips
from backends.videodepth.loading import load_folder
from training import videodepth_interp as T

from .conftest import TINY_UNET, tiny_pipeline, tiny_unet, tiny_video
from .test_training import TINY


def test_warm_start_with_zero_new_channels_computes_the_main_model():
    main = tiny_unet(seed=3)
    interp = tiny_unet(seed=4, in_channels=4 * TINY_UNET["out_channels"])
    interp.load_state_dict(T.expand_conv_in(main.state_dict(), interp.config.in_channels))
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 3, 96, 8, 8, generator=g)
    extra = torch.randn(1, 3, 96, 8, 8, generator=g)  # masked key latents and mask: ignored at step 0
    pos = torch.tensor([[5, 6, 7]])
    with torch.no_grad():
        a = main(x, 500.0, position_ids=pos).sample
        b = interp(torch.cat([x, extra], 2), 500.0, position_ids=pos).sample
    assert torch.allclose(a, b, atol=1e-5)
    assert interp.conv_in.weight[:, 96:].abs().max() == 0


def test_key_inputs_hold_the_end_latents_and_a_mask():
    z = torch.randn(2, 6, 4, 3, 3)
    keys = T.key_inputs(z, torch.Generator().manual_seed(0), key_noise=0.0, key_gain=0.0)
    masked, mask = keys[:, :, :4], keys[:, :, 4:]
    assert torch.equal(masked[:, [0, -1]], z[:, [0, -1]]) and masked[:, 1:-1].abs().max() == 0
    assert mask[:, [0, -1]].min() == 1 and mask[:, 1:-1].max() == 0


def test_predicted_keys_are_the_main_models_estimate_in_the_true_scale():
    main = tiny_unet(seed=3)
    g = torch.Generator().manual_seed(0)
    z, rgb = torch.randn(2, 5, 48, 2, 2, generator=g), torch.randn(2, 5, 48, 2, 2, generator=g)
    pos = torch.arange(5).repeat(2, 1)
    keys = T.predicted_keys(main, 3 * z + 1, rgb, pos)
    with torch.no_grad():
        raw = main(torch.cat([torch.zeros_like(z[:, [0, -1]]), rgb[:, [0, -1]]], 2), 1000.0,
                   position_ids=pos[:, [0, -1]]).sample
    truth = (3 * z + 1)[:, [0, -1]]
    assert keys.shape == truth.shape
    for b in range(2):  # the fit is the best scale and shift: never further from the truth than the raw estimate
        assert ((keys[b] - truth[b]) ** 2).mean() < ((raw[b] - truth[b]) ** 2).mean()
        c = np.corrcoef(keys[b].flatten().numpy(), raw[b].flatten().numpy())[0, 1]
        assert abs(c) > 0.999  # an affine map of the main model's own estimate


def test_segments_keep_the_clip_scale_not_the_segment_scale():
    rng = np.random.default_rng(0)
    depth = np.linspace(1, 9, 24, dtype=np.float32)[:, None, None] * np.ones((1, 8, 8), np.float32)
    clips = {"rgb": np.zeros((1, 24, 8, 8, 3), np.uint8), "depth": depth[None]}
    spans = []
    for _ in range(20):
        rgb, disp, pos = T.sample_segments(clips, rng, 18)
        assert disp.shape[1] == rgb.shape[1] == pos.shape[1] and disp.min() >= -1 - 1e-5 and disp.max() <= 1 + 1e-5
        assert (np.diff(pos.numpy(), axis=1) > 0).all()
        spans.append(disp.max() - disp.min())
    assert min(spans) < 1.9  # a segment does not always span [-1, 1]: its keys must tell the scale


def _tiny_asset(tmp_path):
    pipe = tiny_pipeline()
    pipe.register_to_config(prediction_type="sample")
    pipe.save_pretrained(tmp_path / "main")
    torch.save({"ema": pipe.unet.state_dict()}, tmp_path / "main_state.pt")
    return tmp_path / "main"


def test_tiny_run_trains_resumes_and_exports_a_loadable_unet_interp(tmp_path):
    main = _tiny_asset(tmp_path)
    args = ["--run-dir", str(tmp_path / "run"), "--data-dir", str(tmp_path / "data"), "--train-clips", "2",
            "--eval-clips", "1", "--eval-during-training", "1", "--frames-per-step", "8", "--unet-config", TINY,
            "--log-every", "1", "--main-model", str(main), "--init-from", str(tmp_path / "main_state.pt")]
    T.main([*args, "--max-steps", "2"])
    info = json.loads((tmp_path / "run" / "info.json").read_text())
    assert info["steps"] == 2 and np.isfinite(info["final_loss"]) and info["warm_start"]
    # the scores reported are the saved net's: the main model with it, evaluated again, scores the same
    pipe = load_folder(main)
    pipe.register_modules(unet_interp=N.UNetSpatioTemporalRopeConditionModel.from_pretrained(
        tmp_path / "run" / "model" / "unet_interp"))
    again = T.evaluate_long(pipe, cached_clips("eval", tmp_path / "data", 1), 1, methods=("interp",))
    assert set(again["interp"]) == {"absrel", "delta1", "tae"}
    assert again["interp"] == pytest.approx(info["eval_1step"]["interp"], abs=2e-5, nan_ok=True)
    log = (tmp_path / "run" / "log.txt").read_text()
    assert "warm start" in log and "before training" in log and " tgm " in log
    T.main([*args, "--max-steps", "3", "--resume", "--predicted-keys-p", "1"])
    assert "resumed at step 2" in (tmp_path / "run" / "log.txt").read_text()
    assert json.loads((tmp_path / "run" / "info.json").read_text())["predicted_keys_p"] == 1
    T.main([*args, "--phase", "export", "--out", str(main)])
    config = json.loads((main / "unet_interp" / "config.json").read_text())
    assert config["in_channels"] == 4 * config["out_channels"] and "_name_or_path" not in config
    pipe = load_folder(main)
    assert pipe.unet_interp is not None and pipe.unet_interp.dtype == torch.float32
    from backends.videodepth.interpolation import stream_depth_interpolated

    video = tiny_video(20, size=16)
    out = list(stream_depth_interpolated(pipe, lambda: iter(video), 20, num_interp=4, overlap=2, num_inference_steps=1))
    assert [i for i, _ in out] == list(range(20))
    T.main([*args, "--phase", "evaluate", "--out", str(main), "--long-clips", "2", "--long-frames", "20"])
    result = json.loads((tmp_path / "run" / "eval_long.json").read_text())
    scores = result["steps_1"]
    assert {"interp", "windows", "perframe"} <= set(scores) and scores["interp_minus_windows"]["absrel"]["clips"] == 2
    # three methods, three results; each paired difference is the difference of the per-method means
    assert len({json.dumps(scores[m], sort_keys=True) for m in ("interp", "windows", "perframe")}) == 3
    for a, b in (("interp", "windows"), ("interp", "perframe"), ("windows", "perframe")):
        for k in ("absrel", "delta1", "tae"):
            assert scores[f"{a}_minus_{b}"][k]["mean"] == pytest.approx(scores[a][k] - scores[b][k], abs=3e-5)


def test_paired_differences_count_the_better_clips():
    rows = {"a": [{"absrel": 0.1, "delta1": 0.9, "tae": 0.01}, {"absrel": 0.3, "delta1": 0.7, "tae": 0.02}],
            "b": [{"absrel": 0.2, "delta1": 0.8, "tae": 0.01}, {"absrel": 0.2, "delta1": 0.8, "tae": 0.03}]}
    d = T.paired(rows, "a", "b")
    assert d["absrel"]["mean"] == 0 and d["absrel"]["better_clips"] == 1 and d["absrel"]["se"] > 0
    assert d["delta1"]["better_clips"] == 1 and d["tae"]["better_clips"] == 1 and d["tae"]["mean"] < 0
