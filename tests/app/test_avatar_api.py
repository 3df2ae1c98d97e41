"""The Avatar tab through gradio_client on the embedded reconstructor: reconstruct a synthetic subject,
re-pose it, render, make a video, export and parse the 3DGS .ply; an example upload reconstructs; bad
input is a clear error and the session goes on; the API's parameters are named (a call may name only a few)."""

import json
from pathlib import Path

import pytest
from gradio_client import handle_file


@pytest.fixture(scope="module", autouse=True)
def _anny_loaded_once():
    """anny's one-time build lives in the user's models folder (minutes to redo); load it from there before
    the tests' empty models folders take over (as tests/backends/avatar/conftest.py does)."""
    from backends.avatar import body
    from backends.common.settings import Settings

    body.body_model(Settings())


NEUTRAL = [0, 45, 45, 0, 0, 5, 5, 0, 0, 5, 5, 0, 0, 0, 0]  # the sliders in the tab's order (A-pose)
PLY_FIELDS = (["x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2"] + [f"f_rest_{i}" for i in range(45)]
              + ["opacity"] + [f"scale_{i}" for i in range(3)] + [f"rot_{i}" for i in range(4)])


def reconstruct(client, source="synthetic", subject=0, views=2, iters=1, images=None, masks=None, spec=None,
                pose=NEUTRAL):
    return client.predict(source, subject, views, iters, images, masks, spec, *pose, api_name="/avatar_reconstruct")


@pytest.fixture(scope="module")
def avatar(client):
    return reconstruct(client)


def test_reconstruct_sends_the_viewer_its_splats_and_bones(avatar):
    gallery, status, payload, bones = avatar
    assert len(gallery) == 2 and "Gaussians in" in status and "avatar-embedded" in status
    data, pose = json.loads(payload), json.loads(bones)
    assert data["count"] > 1000 and pose["id"] == data["id"] and len(pose["bones"]) == data["bones"]
    assert "/tmp" not in payload and "/work" not in payload  # no server paths


def test_pose_and_preset_change_the_bones(client, avatar):
    before = json.loads(avatar[3])
    raised = list(NEUTRAL)
    raised[2] = 160  # right arm up
    after = json.loads(client.predict(*raised, avatar[3], api_name="/avatar_pose"))
    assert after["id"] == before["id"] and after["bones"] != before["bones"] and after["pose"]["arm_raise_r"] == 160
    out = client.predict("waving", avatar[3], api_name="/avatar_preset")
    assert out[2] == 150 and json.loads(out[-1])["pose"]["arm_raise_r"] == 150


def test_pose_data_that_is_not_the_tabs_json_is_a_clear_error(client, avatar):
    for bad in ("{", "[1, 2]", '"s"', "5", "[" * 100_000 + "]" * 100_000):
        with pytest.raises(Exception, match="pose data is not the JSON this tab writes") as e:
            client.predict(*NEUTRAL, bad, api_name="/avatar_pose")
        assert "Internal error" not in str(e.value)
    with pytest.raises(Exception, match="pose data is not the JSON"):
        client.predict("waving", "[1]", api_name="/avatar_preset")
    assert json.loads(client.predict(*NEUTRAL, "", api_name="/avatar_pose"))["id"] == ""  # empty: no id, fine
    assert json.loads(client.predict(*NEUTRAL, avatar[3], api_name="/avatar_pose"))["id"] == json.loads(avatar[3])["id"]


def test_cameras_json_nested_too_deep_is_a_clear_error():
    from backends.avatar.uploads import parse_spec
    from backends.common.errors import InputError

    with pytest.raises(InputError, match="cameras file is not valid JSON"):
        parse_spec("[" * 100_000 + "]" * 100_000)


def test_render_video_and_export(client, avatar):
    image, truth, status = client.predict(30, 256, *NEUTRAL, api_name="/avatar_render")
    assert Path(image).is_file() and Path(truth).is_file() and "ms" in status and "PSNR" in status
    video = client.predict("animation", 8, *NEUTRAL, api_name="/avatar_video")
    path = video["video"] if isinstance(video, dict) else video
    assert Path(path).suffix == ".mp4" and Path(path).stat().st_size > 1000
    files = {Path(f).name: f for f in client.predict(*NEUTRAL, api_name="/avatar_export")}
    assert {"gaussians.ply", "mesh.obj", "mesh.ply", "avatar.safetensors", "run.json"} <= set(files)
    card = json.loads(Path(files["run.json"]).read_text())  # the export's run card: it replays to the same files
    assert card["action"] == "avatar_export" and card["request"]["pose"]["arm_raise_l"] == NEUTRAL[1]
    assert card["result"]["avatar"]["source"].startswith("synthetic subject")  # how the avatar was made
    raw = Path(files["gaussians.ply"]).read_bytes()
    header = raw[:raw.index(b"end_header\n")].decode().splitlines()
    assert [line.split()[2] for line in header if line.startswith("property")] == PLY_FIELDS


def test_example_upload_reconstructs_and_bad_uploads_are_clear(client, tmp_path):
    files = client.predict(1, 2, api_name="/avatar_example")
    by_name = {Path(f).name: f for f in files}
    images = [handle_file(by_name[f"view{i}.png"]) for i in range(2)]
    masks = [handle_file(by_name[f"view{i}_mask.png"]) for i in range(2)]
    out = reconstruct(client, "upload", images=images, masks=masks, spec=handle_file(by_name["cameras.json"]))
    assert "upload (2 views)" in out[1]
    with pytest.raises(Exception, match="Upload the images"):
        reconstruct(client, "upload", images=images, masks=None, spec=None)
    with pytest.raises(Exception, match="2 view"):
        reconstruct(client, "upload", images=images[:1], masks=masks, spec=handle_file(by_name["cameras.json"]))
    from PIL import Image

    tiny = tmp_path / "tiny.png"
    Image.new("RGB", (4, 4)).save(tiny)
    with pytest.raises(Exception, match="Image 'tiny.png': Image is 4×4; it must be at least 8×8 pixels"):
        reconstruct(client, "upload", images=[handle_file(str(tiny)), images[1]], masks=masks,
                    spec=handle_file(by_name["cameras.json"]))
    assert "Gaussians in" in reconstruct(client)[1]  # the session goes on


def test_a_downloaded_run_card_reproduces_the_avatar_through_the_cli(client, tmp_path):
    """Save a reconstruction's downloads into one folder, rerun `iclr25-studio replay run.json`: the same views
    and the same avatar (its Gaussians, skeleton and the posed .ply)."""
    import os
    import shutil
    import subprocess
    import sys

    import numpy as np
    import torch
    from PIL import Image
    from safetensors.numpy import load_file

    from backends.avatar.body import anny_cache_dir_loaded

    downloads = tmp_path / "downloads"
    downloads.mkdir()
    assert "Gaussians in" in reconstruct(client, subject=5, views=1, iters=1)[1]
    for f in client.predict(api_name="/avatar_downloads"):  # what the page offers after a reconstruction
        shutil.copy(f, downloads / Path(f).name)
    card = json.loads((downloads / "run.json").read_text())
    assert card["action"] == "avatar_reconstruct" and card["request"]["model"] == "avatar-embedded"
    assert card["request"]["subject"] == 5 and card["request"]["n_views"] == 1 and card["result"]["views"] == 1
    out = tmp_path / "again"
    env = {**os.environ, "ICLR25_MODELS_DIR": str(anny_cache_dir_loaded().parents[1]),  # anny's build is cached there
           "OMP_NUM_THREADS": str(torch.get_num_threads())}  # the server's thread count: the same float32 sums
    res = subprocess.run([sys.executable, "-m", "app", "replay", str(downloads / "run.json"), "--out", str(out)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    for name in ("input_0.png",):  # the view the model saw
        assert np.array_equal(np.asarray(Image.open(out / name)), np.asarray(Image.open(downloads / name))), name
    before, again = load_file(downloads / "avatar.safetensors"), load_file(out / "avatar.safetensors")
    assert set(before) == set(again) and before["rgb"].shape[0] > 1000
    for key in before:
        assert np.allclose(before[key], again[key], atol=1e-5), key
    raws = [(d / "gaussians.ply").read_bytes() for d in (downloads, out)]
    ply = [np.frombuffer(raw[raw.index(b"end_header\n") + len(b"end_header\n"):], "<f4") for raw in raws]
    assert ply[0].shape == ply[1].shape and np.allclose(ply[0], ply[1], atol=1e-4)
    assert json.loads((out / "run.json").read_text())["result"]["gaussians"] == card["result"]["gaussians"]


def test_reconstruct_takes_named_parameters_and_the_rest_keep_their_defaults(client):
    """``client.predict(api_name=..., **named)``: the source, the uploads, the other pose sliders and the model are
    left to their defaults (a synthetic subject, the A-pose but the named slider, the embedded model)."""
    gallery, status, _, bones = client.predict(api_name="/avatar_reconstruct", subject=3, n_views=1, iterations=1,
                                               arm_raise_r=150)
    assert len(gallery) == 1 and "synthetic subject 3" in status and "(1 feedback iteration(s), 1 view(s))" in status
    pose = json.loads(bones)["pose"]
    assert pose["arm_raise_r"] == 150 and pose["arm_raise_l"] == 45  # the named slider; the others the A-pose's
    with pytest.raises(Exception, match="greater than maximum value 5"):  # the request's range, on the slider
        client.predict(api_name="/avatar_reconstruct", n_views=9)
    with pytest.raises(Exception, match="not in the list of choices"):  # no server path through the API
        client.predict(api_name="/avatar_reconstruct", model="/tmp")
