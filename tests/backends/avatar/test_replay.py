"""Every Avatar action's run card replays through the CLI (``iclr25-studio replay run.json --out DIR``) from a
folder holding only the run's files, as a download would: a video of a saved avatar gives the same frames, a
photo fit the same fit, and an avatar exported in another pose (no run of its own) carries the card of the
reconstruction that made it, which makes the same avatar again. (``avatar_reconstruct`` downloaded from the
tab: tests/app/test_avatar_api.py.)"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from backends.avatar.actions import FIT_PHOTOS, RECONSTRUCT, VIDEO
from backends.avatar.requests import PhotosRequest, ReconstructRequest, VideoRequest
from backends.common.action_cli import run_action


def replay(card: Path, out: Path) -> dict:
    """``python -m app replay`` in a fresh process; the run card it wrote into ``out``."""
    from backends.avatar.body import anny_cache_dir_loaded

    env = {**os.environ, "ICLR25_MODELS_DIR": str(anny_cache_dir_loaded().parents[1])}  # anny's build is there
    res = subprocess.run([sys.executable, "-m", "app", "replay", str(card), "--out", str(out)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "run" in json.loads(res.stdout.strip().splitlines()[-1])["files"]
    return json.loads((out / "run.json").read_text())


def downloaded(paths: dict[str, Path], folder: Path) -> Path:
    """The run's files copied into a folder of their own (what a person who downloads them has)."""
    folder.mkdir()
    for path in paths.values():
        shutil.copy(path, folder / Path(path).name)
    return folder


def tensors(path: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(path)


def assert_same_avatar(a: Path, b: Path, tol: float = 0.0) -> None:
    """The same avatar: equal tensors (to ``tol``: another process may sum in another order, its thread count)."""
    before, again = tensors(a), tensors(b)
    assert set(before) == set(again) and before["rgb"].shape[0] > 1000
    for key in before:
        assert np.allclose(before[key], again[key], rtol=tol, atol=tol), key


@pytest.fixture(scope="module")
def reconstruction(tmp_path_factory):
    """A small avatar of the embedded reconstructor (one view, one feedback iteration), its run written."""
    folder = tmp_path_factory.mktemp("reconstruct")
    result, paths = run_action(RECONSTRUCT, ReconstructRequest(subject=4, n_views=1, iterations=1), folder)
    return result, paths


def test_a_video_of_a_saved_avatar_replays_to_the_same_frames(reconstruction, tmp_path):
    from backends.avatar.pose import preset
    from backends.common.video import read_video

    _, made = reconstruction
    run = tmp_path / "run"
    request = VideoRequest(kind="turntable", pose=preset("waving"), azimuth_deg=20.0, frames=4, size=64,
                           avatar=made["avatar"], out=run)
    video, paths = run_action(VIDEO, request, run)
    assert {p.name for p in paths.values()} == {"turntable.mp4", "input_avatar.safetensors", "run.json"}
    downloads = downloaded(paths, tmp_path / "downloads")
    card = replay(downloads / "run.json", tmp_path / "again")
    assert card["action"] == "avatar_video" and card["request"]["pose"] == preset("waving").as_dict() and card["result"]["frames"] == 4
    first = read_video(downloads / "turntable.mp4", max_side=None).frames
    again = read_video(tmp_path / "again" / "turntable.mp4", max_side=None).frames
    assert first.shape == again.shape == (4, 64, 64, 3)
    assert np.abs(first.astype(int) - again.astype(int)).max() <= 1
    assert np.abs(first[0].astype(int) - first[2].astype(int)).max() > 30  # the camera moved: the frames differ


def test_an_export_in_another_pose_carries_the_run_that_made_the_avatar(reconstruction, tmp_path):
    from backends.avatar.outputs import write_avatar
    from backends.avatar.pose import preset
    from backends.common.runcard import carry_card

    result, made = reconstruction
    export = tmp_path / "export"
    paths = write_avatar(result, preset("T-pose"), export)
    carried = carry_card(made["run"], export)
    assert not (export / "card.json").exists() and carried["run"] == export / "run.json"
    assert (export / "run.json").read_text() == made["run"].read_text()
    assert '"arm_raise_l": 90' in (export / "mesh.obj").read_text().splitlines()[1]  # the pose it is in
    downloads = downloaded({**paths, **carried}, tmp_path / "downloads")
    assert replay(downloads / "run.json", tmp_path / "again")["action"] == "avatar_reconstruct"
    assert_same_avatar(made["avatar"], paths["avatar"])  # the export holds the avatar the run made
    assert_same_avatar(downloads / "avatar.safetensors", tmp_path / "again" / "avatar.safetensors", tol=1e-4)


def test_a_photo_fit_replays_to_the_same_fit(tmp_path):
    from backends.avatar.data import sample_subject
    from backends.common.imageio import open_image

    photos = []
    for v in sample_subject(3_000_000, 2, 256).views:  # rendered people stand in for photos (see test_photos.py)
        photos.append(np.round((v.rgb * v.mask[..., None] + 0.8 * (1 - v.mask[..., None])) * 255).astype(np.uint8))
    request = PhotosRequest(photos=photos, names=["front.png", "side.png"], steps=40)
    fitted, paths = run_action(FIT_PHOTOS, request, tmp_path / "run")
    assert {p.name for p in paths.values()} >= {"photo0_fit.png", "photo1_fit.png", "run.json"}
    downloads = downloaded(paths, tmp_path / "downloads")
    again = replay(downloads / "run.json", tmp_path / "again")
    before = json.loads((downloads / "run.json").read_text())
    assert again["action"] == "avatar_fit_photos"
    assert before["request"] == again["request"] and again["result"]["photos"] == ["front.png", "side.png"]
    for key in ("pose", "body"):
        for name, value in before["result"][key].items():
            assert again["result"][key][name] == pytest.approx(value, abs=1e-3), (key, name)
    assert again["result"]["reprojection_px"] == pytest.approx(before["result"]["reprojection_px"], abs=0.02)
    for i in range(2):
        a = np.asarray(open_image(downloads / f"photo{i}_fit.png")).astype(int)
        b = np.asarray(open_image(tmp_path / "again" / f"photo{i}_fit.png")).astype(int)
        assert a.shape == b.shape and np.abs(a - b).max() <= 1, i
