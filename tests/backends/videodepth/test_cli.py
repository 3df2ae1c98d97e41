"""``iclr25-studio videodepth``: a folder of frames and a video in, raw files out; --resume continues a stopped run;
its run card replays (``iclr25-studio replay``) to the same depth."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from backends.common.errors import Cancelled
from backends.common.progress import CancelToken, ProgressEvent
from backends.common.video import write_mp4

ROOT = Path(__file__).resolve().parents[3]


def cli(*args):
    return subprocess.run([sys.executable, "-m", "app", "videodepth", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def test_folder_of_frames_to_raw_files_and_a_ply(tmp_path):
    frames = tmp_path / "frames"
    frames.mkdir()
    base = np.random.default_rng(0).integers(0, 255, (40, 80, 3), dtype=np.uint8)
    for i in range(6):  # a still picture with one small square moving: most pixels are static
        f = base.copy()
        f[10:18, 8 * i:8 * i + 8] = 255
        Image.fromarray(f).save(frames / f"f{i:03d}.png")
    res = cli("--input", frames, "--out", tmp_path / "out", "--fps", 12, "--ply-frame", 2, "--baseline-frames", 3)
    assert res.returncode == 0, res.stderr
    line = json.loads(res.stdout.strip().splitlines()[-1])
    assert line["frames"] == 6 and line["size"] == [64, 32]
    # the flicker printed is the score of the written disparity on the first 3 frames, as resized for the model
    from backends.videodepth.outputs import flicker_score

    disparity = np.load(tmp_path / "out" / "disparity.npz")["disparity"]
    rgb = np.stack([np.asarray(Image.open(frames / f"f{i:03d}.png").convert("RGB").resize((64, 32), Image.Resampling.BOX))
                    for i in range(3)])
    assert line["flicker"] == pytest.approx(flicker_score(disparity[:3], rgb)) and line["baseline_flicker"] >= 0
    with zipfile.ZipFile(tmp_path / "out" / "depth_png16.zip") as z:
        assert len(z.namelist()) == 6
    assert (tmp_path / "out" / "frame_00002.ply").is_file() and (tmp_path / "out" / "depth_side_by_side.mp4").is_file()
    Image.fromarray(np.zeros((20, 20, 3), np.uint8)).save(frames / "f999.png")
    res = cli("--input", frames, "--out", tmp_path / "bad")
    assert res.returncode == 2 and "every frame of the folder must be 80×40" in res.stderr


def test_resume_continues_a_stopped_run(tmp_path):
    from backends.videodepth.loading import load_model
    from backends.videodepth.service import VideoDepthRequest, estimate_depth

    rng = np.random.default_rng(1)
    base = rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)
    src = write_mp4((np.roll(base, i, 1) for i in range(40)), tmp_path / "in.mp4", fps=10)
    out = tmp_path / "out"
    res = cli("--input", src, "--out", out, "--resume")
    assert res.returncode == 2 and "no stopped run" in res.stderr
    cancel = CancelToken()
    req = VideoDepthRequest(src, out, num_inference_steps=1, window=16, stride=12, baseline_frames=0)
    with pytest.raises(Cancelled):
        for item in estimate_depth(req, load_model(), cancel):
            if isinstance(item, ProgressEvent) and item.message.startswith("window 2 "):
                cancel.cancel()
    res = cli("--input", src, "--out", out, "--steps", 1, "--window", 16, "--stride", 12, "--baseline-frames", 0,
              "--resume")
    assert res.returncode == 0, res.stderr
    line = json.loads(res.stdout.strip().splitlines()[-1])
    assert line["frames"] == 40 and line["resumed_at_frame"] == 12
    assert np.load(out / "disparity.npz")["disparity"].shape == (40, 64, 64)
    # the resumed run's card (it says resume: true) replays into a fresh folder from the first frame: the same depth
    card = json.loads((out / "run.json").read_text())
    assert card["request"]["resume"] is True and card["result"]["resumed_at_frame"] == 12
    again = tmp_path / "again"
    res = subprocess.run([sys.executable, "-m", "app", "replay", out / "run.json", "--out", again], capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    replayed = np.load(again / "disparity.npz")["disparity"].astype(np.float32)
    resumed = np.load(out / "disparity.npz")["disparity"].astype(np.float32)
    # the same depth; runs in other processes (other thread counts) may round a float16 value the other way
    assert np.abs(replayed - resumed).max() <= 2e-3 and np.abs(replayed - resumed).mean() < 1e-4
    assert json.loads((again / "run.json").read_text())["result"]["resumed_at_frame"] == 0


def test_a_real_photo_it_was_never_calibrated_on_gets_the_notice_and_its_depth(tmp_path):
    """As a person tries it: a photograph of an animal (held out of the out-of-domain calibration) through the CLI
    with the embedded model gives depth and says the model does not know such inputs."""
    from backends.common.ood import HELD_OUT_PHOTOS, photo_path

    assert "chelsea.png" in HELD_OUT_PHOTOS
    res = cli("--input", photo_path("chelsea.png"), "--out", tmp_path / "out", "--steps", 1)
    assert res.returncode == 0, res.stderr
    line = json.loads(res.stdout.strip().splitlines()[-1])
    assert line["frames"] == 1 and line["domain"]["in_domain"] is False
    assert "note: This input looks unlike anything the embedded model was trained on" in res.stderr
    assert "iclr25-studio models download depth-any-video" in res.stderr
