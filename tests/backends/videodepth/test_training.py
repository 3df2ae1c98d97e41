"""The training script trains a few steps of a tiny config, checkpoints, evaluates and resumes."""

import json

import numpy as np
import pytest

from backends.videodepth import networks as N
from backends.videodepth.data import cached_clips
from training import videodepth_model as T

from .conftest import TINY_UNET

TINY = json.dumps({k: v for k, v in TINY_UNET.items() if k in ("block_out_channels", "down_block_types", "up_block_types",
                                                              "num_attention_heads", "cross_attention_dim")})


def test_trains_checkpoints_and_resumes(tmp_path):
    args = ["--run-dir", str(tmp_path / "run"), "--data-dir", str(tmp_path / "data"), "--train-clips", "2",
            "--eval-clips", "1", "--eval-during-training", "1", "--frames-per-step", "4", "--unet-config", TINY,
            "--log-every", "1"]
    T.main([*args, "--max-steps", "3"])
    info = json.loads((tmp_path / "run" / "info.json").read_text())
    assert info["steps"] == 3 and np.isfinite(info["final_loss"])
    assert info["eval_1step"]["absrel"] > 0
    # the scores reported are the saved model's: evaluated again from the checkpoint, they are the same
    ema = N.UNetSpatioTemporalRopeConditionModel.from_pretrained(tmp_path / "run" / "model" / "unet")
    again = T.evaluate(ema, N.build_codec(), cached_clips("eval", tmp_path / "data", 1), info["prediction"], n_clips=1)
    assert set(again) == set(info["eval_1step"]) and {"absrel", "delta1"} <= set(again)
    assert again == pytest.approx(info["eval_1step"], rel=1e-5, nan_ok=True)
    T.main([*args, "--max-steps", "5", "--resume"])
    log = (tmp_path / "run" / "log.txt").read_text()
    assert "resumed at step 3" in log and "step 5 loss" in log


def test_temporal_gradient_loss_is_zero_for_the_truth_and_flags_flicker():
    import torch

    g = torch.Generator().manual_seed(0)
    target = torch.randn(2, 6, 4, 3, 3, generator=g).cumsum(1)  # a clip that changes from frame to frame
    assert T.temporal_gradient_loss(target, target).item() == 0
    # an error shared by every frame is not flicker: only the change from frame to frame counts
    assert T.temporal_gradient_loss(target + torch.randn(2, 1, 4, 3, 3, generator=g), target).item() < 1e-6
    shuffled = target[:, torch.tensor([3, 0, 5, 1, 4, 2])]
    assert T.temporal_gradient_loss(shuffled, target).item() > 0.5
    flicker = target + 0.1 * torch.randn(target.shape, generator=g)
    assert 0 < T.temporal_gradient_loss(flicker, target).item() < T.temporal_gradient_loss(shuffled, target).item()
    assert T.temporal_gradient_loss(target[:, :1] + 1, target[:, :1]).item() == 0  # single frames: nothing temporal


def test_temporal_recipe_trains_and_is_recorded(tmp_path):
    args = ["--run-dir", str(tmp_path / "run"), "--data-dir", str(tmp_path / "data"), "--train-clips", "2",
            "--eval-clips", "1", "--eval-during-training", "0", "--frames-per-step", "4", "--unet-config", TINY,
            "--log-every", "1", "--max-steps", "2", "--temporal-weight", "0.5", "--zero-start-p", "1",
            "--duration-p", "0,0,1,0,0"]
    T.main(args)
    info = json.loads((tmp_path / "run" / "info.json").read_text())
    assert info["temporal_weight"] == 0.5 and info["duration_p"] == [0, 0, 1, 0, 0] and info["zero_start_p"] == 1
    log = (tmp_path / "run" / "log.txt").read_text()
    tgm = [float(line.split(" tgm ")[1].split()[0]) for line in log.splitlines() if " tgm " in line]
    assert len(tgm) == 2 and all(t > 0 for t in tgm)  # 4-frame clips only: the temporal term is active


def test_duration_probabilities_are_validated():
    import argparse

    import pytest

    assert T._probabilities("0.2,0.2,0.2,0.2,0.2") == (0.2,) * 5
    with pytest.raises(argparse.ArgumentTypeError):
        T._probabilities("0.5,0.5")


def test_export_records_the_recipe_and_scores_against_per_frame(tmp_path):
    from backends.videodepth.pipeline import VideoDepthPipeline

    args = ["--run-dir", str(tmp_path / "run"), "--data-dir", str(tmp_path / "data"), "--train-clips", "2",
            "--eval-clips", "1", "--eval-during-training", "0", "--frames-per-step", "4", "--unet-config", TINY]
    T.main([*args, "--max-steps", "1", "--temporal-weight", "0.25"])
    T.main([*args, "--phase", "export", "--export-eval-clips", "1", "--out", str(tmp_path / "asset")])
    metrics = json.loads((tmp_path / "asset" / "metrics.json").read_text())
    assert metrics["recipe"]["temporal_weight"] == 0.25 and metrics["train_steps"] == 1
    assert {"model_tae", "perframe_tae", "model_absrel", "perframe_absrel"} <= set(metrics["steps_3"])
    assert VideoDepthPipeline.from_pretrained(tmp_path / "asset").config.prediction_type == "sample"
