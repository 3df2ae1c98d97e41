"""Every Avatar action's run card replays (``iclr25-studio replay run.json --out DIR``) from a folder holding only
the run's files, as a download would: a video of a saved avatar gives the same frames, a photo fit the same fit,
an avatar exported in another pose the same files (its card naming how the avatar was made), a render the same
image and an upload example the same files. (``avatar_reconstruct`` downloaded from the tab:
tests/app/test_avatar_api.py.)"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from backends.avatar.actions import EXAMPLE, EXPORT, FIT_PHOTOS, RECONSTRUCT, RENDER, VIDEO
from backends.avatar.requests import (
    ExampleRequest,
    ExportRequest,
    PhotosRequest,
    ReconstructRequest,
    RenderRequest,
    VideoRequest,
)
from backends.common.action_cli import replay_card, run_action


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


def ply_values(path: Path) -> np.ndarray:
    raw = Path(path).read_bytes()
    return np.frombuffer(raw[raw.index(b"end_header\n") + len(b"end_header\n"):], "<f4")


def test_an_export_in_another_pose_replays_to_the_same_files_and_names_how_the_avatar_was_made(reconstruction,
                                                                                                 tmp_path):
    from backends.avatar.pose import preset

    _, made = reconstruction
    posed, paths = run_action(EXPORT, ExportRequest(pose=preset("T-pose"), avatar=made["avatar"]), tmp_path / "run")
    assert {p.name for p in paths.values()} == {"gaussians.ply", "mesh.obj", "mesh.ply", "avatar.safetensors",
                                                "input_avatar.safetensors", "run.json"}
    assert '"arm_raise_l": 90' in paths["mesh_obj"].read_text().splitlines()[1]  # the pose it is in
    assert_same_avatar(made["avatar"], paths["avatar"])  # the export holds the avatar the run made
    card = json.loads(paths["run"].read_text())
    made_card = json.loads(made["run"].read_text())
    assert card["action"] == "avatar_export" and card["request"]["pose"] == preset("T-pose").as_dict()
    assert card["result"]["avatar"]["source"] == "synthetic subject 4" == made_card["result"]["source"]
    downloads = downloaded(paths, tmp_path / "downloads")
    again = replay(downloads / "run.json", tmp_path / "again")
    assert again["action"] == "avatar_export" and again["request"] == card["request"]
    assert_same_avatar(downloads / "avatar.safetensors", tmp_path / "again" / "avatar.safetensors")
    first, second = ply_values(downloads / "gaussians.ply"), ply_values(tmp_path / "again" / "gaussians.ply")
    assert first.shape == second.shape and np.allclose(first, second, atol=1e-4)


def test_a_render_replays_to_the_same_image(reconstruction, tmp_path):
    from backends.avatar.pose import preset
    from backends.common.imageio import open_image

    _, made = reconstruction
    request = RenderRequest(pose=preset("walking"), azimuth_deg=60.0, size=64, avatar=made["avatar"])
    rendered, paths = run_action(RENDER, request, tmp_path / "run")
    assert {p.name for p in paths.values()} == {"render.png", "ground_truth.png", "input_avatar.safetensors",
                                                "run.json"}
    assert rendered.psnr is not None and (rendered.alpha > 0.5).mean() > 0.03  # the person is in the frame
    downloads = downloaded(paths, tmp_path / "downloads")
    again, files = replay_card(downloads / "run.json", tmp_path / "again")
    card = json.loads(files["run"].read_text())
    assert card["action"] == "avatar_render" and card["request"]["azimuth_deg"] == 60.0
    assert card["result"]["psnr"] == pytest.approx(json.loads(paths["run"].read_text())["result"]["psnr"], abs=0.01)
    a = np.asarray(open_image(downloads / "render.png")).astype(int)
    b = np.asarray(open_image(files["render"])).astype(int)
    assert a.shape == b.shape == (64, 64, 3) and np.abs(a - b).max() <= 1


def test_an_upload_example_replays_to_the_same_files(tmp_path):
    _, paths = run_action(EXAMPLE, ExampleRequest(subject=2, n_views=2, size=48), tmp_path / "run")
    assert {p.name for p in paths.values()} == {"view0.png", "view0_mask.png", "view1.png", "view1_mask.png",
                                                "cameras.json", "run.json"}
    _, files = replay_card(downloaded(paths, tmp_path / "downloads") / "run.json", tmp_path / "again")
    for name in ("view0.png", "view1_mask.png", "cameras.json"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "run" / name).read_bytes(), name


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


def test_a_stop_ends_a_render_an_export_and_an_example(reconstruction):
    """The work of each light action stops at its next step once its token is cancelled (the tab's Stop)."""
    from backends.common.errors import Cancelled
    from backends.common.progress import CancelToken, run_to_result

    _, made = reconstruction
    for action, request in ((RENDER, RenderRequest(size=64, avatar=made["avatar"])),
                            (EXPORT, ExportRequest(avatar=made["avatar"])),
                            (EXAMPLE, ExampleRequest(n_views=2, size=48))):
        token = CancelToken()
        token.cancel()
        with pytest.raises(Cancelled):
            run_to_result(action.run(request, token))
