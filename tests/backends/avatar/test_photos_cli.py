"""``iclr25-studio avatar reconstruct --photos``, run as a person would: rendered synthetic people saved as PNG
stand in for photos (no full-body photo of a real person ships with scikit-image or matplotlib)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from skimage import data as skdata

from backends.common.imageio import save_png


def synthetic_photos(folder, seed=3_000_000, n=2, size=256):
    from backends.avatar.data import sample_subject

    paths = []
    for i, v in enumerate(sample_subject(seed, n, size).views):
        img = np.round((v.rgb * v.mask[..., None] + 0.8 * (1 - v.mask[..., None])) * 255).astype(np.uint8)
        paths.append(save_png(img, folder / f"person{i}.png"))
    return paths


def run(*args):
    from backends.avatar.body import anny_cache_dir_loaded

    env = {**os.environ, "ICLR25_MODELS_DIR": str(anny_cache_dir_loaded().parents[1])}
    return subprocess.run([sys.executable, "-m", "app", "avatar", *args], capture_output=True, text=True,
                          timeout=280, env=env)


@pytest.mark.slow
def test_cli_reconstructs_from_photos_and_refuses_a_photo_without_a_person(tmp_path):
    photos = synthetic_photos(tmp_path)
    out = run("reconstruct", "--photos", *map(str, photos), "--iterations", "1", "--out", str(tmp_path / "av"))
    assert out.returncode == 0, out.stderr[-2000:]
    card = json.loads(out.stdout.strip().splitlines()[-1])
    assert card["views"] == 2 and card["source"] == "upload (2 views)"
    assert {"avatar.safetensors", "photo0_fit.png", "photo1_fit.png"} <= set(card["files"])
    fit = card["photo_fit"]
    assert fit["photos"] == ["person0.png", "person1.png"] and max(fit["reprojection_px"]) < 8
    assert set(fit["pose"]) >= {"arm_raise_l", "knee_r"} and 0 <= fit["body"]["height"] <= 1

    coffee = save_png(skdata.coffee(), tmp_path / "coffee.png")
    out = run("reconstruct", "--photos", str(photos[0]), str(coffee), "--out", str(tmp_path / "no"))
    assert out.returncode != 0 and "No person was found in coffee.png" in out.stderr
    assert not (tmp_path / "no" / "avatar.safetensors").exists()
