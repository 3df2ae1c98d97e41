"""The training script trains a few steps of a tiny config, checkpoints, evaluates and resumes."""

import json

import numpy as np

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
    assert 0 <= info["eval_1step"]["delta1"] <= 1 and info["eval_1step"]["absrel"] > 0
    assert (tmp_path / "run" / "model" / "unet" / "config.json").is_file()
    T.main([*args, "--max-steps", "5", "--resume"])
    log = (tmp_path / "run" / "log.txt").read_text()
    assert "resumed at step 3" in log and "step 5 loss" in log
