"""The Video Depth tab through gradio_client: example, estimate, run, raw outputs, point cloud, Stop/Resume, bad input."""

import io
import json
import re
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from gradio_client import handle_file
from PIL import Image

MODEL = "videodepth-embedded"


def settings(steps=1, stride=12, max_frames=600, baseline=8, long_video="auto"):
    return [MODEL, 64, steps, stride, max_frames, "Spectral", baseline, 0, "zero", long_video]


def example(client, name):
    path = client.predict(name, api_name="/videodepth_example")
    return path["path"] if isinstance(path, dict) else path


def test_example_estimate_run_and_raw_outputs(client):
    clip = example(client, "room A · 48 frames")
    estimate = client.predict(handle_file(clip), *settings(), api_name="/videodepth_estimate")
    assert "48 frame(s)" in estimate and "64×64" in estimate and re.search(r"estimated \*\*\d+ s\*\*", estimate)
    preview, status, video, files, frame, summary = client.predict(
        handle_file(clip), *settings(max_frames=40), api_name="/videodepth_run")
    assert status.startswith("**Done:** 40 frame(s) at 64×64") and MODEL in status and "cpu" in status
    assert summary["frames"] == 40 and summary["baseline_flicker"] >= 0
    names = sorted(Path(f).name for f in files)  # the outputs, and the run card with the input it replays from
    assert names == ["depth_png16.zip", "depth_side_by_side.mp4", "disparity.npz", f"input_{Path(clip).name}",
                     "run.json"]
    with zipfile.ZipFile(next(f for f in files if f.endswith(".zip"))) as z:
        assert len(z.namelist()) == 40
        png = np.asarray(Image.open(io.BytesIO(z.read("depth_00007.png"))))
    assert png.dtype == np.uint16 and png.shape == (64, 64) and png.max() > png.min()
    disparity = np.load(next(f for f in files if f.endswith(".npz")))["disparity"]
    assert disparity.shape == (40, 64, 64)
    # the flicker shown is the score of the disparity written, on the 8 baseline frames as resized for the model
    from backends.common.video import iter_video_frames
    from backends.videodepth.outputs import flicker_score

    rgb = np.stack([np.asarray(Image.fromarray(f).resize((64, 64), Image.Resampling.BOX))
                    for f in iter_video_frames(clip, 1024, stop=8)])
    assert summary["flicker"] == pytest.approx(flicker_score(disparity[:8], rgb))
    assert not any("/" in str(v) for v in summary.values() if isinstance(v, str))  # no server paths
    for method, note in (("interpolation", "filled by the interpolation network"), ("windows", "windows aligned")):
        *_, summary = client.predict(handle_file(clip), *settings(max_frames=40, baseline=0, long_video=method),
                                     api_name="/videodepth_run")
        assert summary["frames"] == 40 and note in " ".join(summary["notes"])

    viewer, files = client.predict(5, api_name="/videodepth_point_cloud")
    data = json.loads(viewer)
    assert data["count"] == 64 * 64 and data["title"] == "frame 5"
    ply = next(f for f in files if f.endswith(".ply"))
    assert Path(ply).read_bytes().startswith(b"ply\nformat binary_little_endian")
    with pytest.raises(Exception, match="greater than maximum value 39"):
        client.predict(99, api_name="/videodepth_point_cloud")


def test_run_by_named_parameters_the_rest_at_the_requests_defaults(client):
    """A script names what it sets (the request's field names) and leaves the rest at their defaults."""
    clip = example(client, "room A · 48 frames")
    _, status, _, files, _, summary = client.predict(input_path=handle_file(clip), num_inference_steps=1, stride=8,
                                                     max_frames=12, baseline_frames=0, api_name="/videodepth_run")
    assert status.startswith("**Done:** 12 frame(s) at 64×64") and summary["frames"] == 12
    card = json.loads(Path(next(f for f in files if f.endswith("run.json"))).read_text())["request"]
    assert (card["num_inference_steps"], card["stride"], card["max_frames"], card["baseline_frames"]) == (1, 8, 12, 0)
    assert (card["model_id"], card["max_side"], card["window"], card["colormap"], card["long_video"]) == \
        (MODEL, 64, 32, "Spectral", "auto")  # the request's defaults


def test_a_downloaded_run_card_replays_to_the_same_disparity(client, tmp_path):
    """Download every file of a run into one folder, `iclr25-studio replay run.json --out again`: the same depth."""
    import shutil
    import subprocess
    import sys

    clip = example(client, "room B · 48 frames")
    *_, files, _, summary = client.predict(handle_file(clip), *settings(max_frames=24, baseline=4),
                                           api_name="/videodepth_run")
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    for f in files:  # a person saves the downloads into one folder
        shutil.copy(f, downloads / Path(f).name)
    card = json.loads((downloads / "run.json").read_text())
    assert card["action"] == "videodepth_estimate_depth" and card["request"]["model_id"] == MODEL
    assert card["request"]["max_frames"] == 24 and card["request"]["out_dir"] == {"$output": True}
    assert card["request"]["input_path"] == {"$file": f"input_{Path(clip).name}"}
    assert card["result"]["frames"] == summary["frames"] == 24
    out = tmp_path / "again"
    res = subprocess.run([sys.executable, "-m", "app", "replay", str(downloads / "run.json"), "--out", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    disparity = np.load(downloads / "disparity.npz")["disparity"]
    assert disparity.shape == (24, 64, 64) and np.array_equal(np.load(out / "disparity.npz")["disparity"], disparity)
    again = json.loads((out / "run.json").read_text())
    assert again["result"]["flicker"] == pytest.approx(summary["flicker"]) and again["request"] == card["request"]


def test_bad_inputs_are_clear_and_the_session_goes_on(client, tmp_path):
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"\x00" * 500)
    with pytest.raises(Exception, match="broken.mp4 is not a video"):  # the name the person uploaded
        client.predict(handle_file(str(bad)), *settings(), api_name="/videodepth_run")
    wide = tmp_path / "wide.png"
    Image.new("RGB", (100_000, 10)).save(wide)
    with pytest.raises(Exception, match="at most"):
        client.predict(handle_file(str(wide)), *settings(), api_name="/videodepth_estimate")
    with pytest.raises(Exception, match="Upload a video"):
        client.predict(None, *settings(), api_name="/videodepth_run")
    photo = tmp_path / "photo.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (48, 80, 3), dtype=np.uint8)).save(photo)
    _, status, _, files, *_ = client.predict(handle_file(str(photo)), *settings(), api_name="/videodepth_run")
    assert status.startswith("**Done:** 1 frame(s) at 64×32") and len(files) == 5  # 3 outputs, the card, the input


def is_image(value) -> bool:
    return isinstance(value, str) and value.endswith((".png", ".webp", ".jpg")) or \
        isinstance(value, dict) and bool(value.get("path"))


def test_stop_then_resume_finishes_the_run(client):
    clip = example(client, "room C · 120 frames")
    job = client.submit(handle_file(clip), *settings(stride=4, baseline=0), api_name="/videodepth_run")
    deadline = time.time() + 120
    while time.time() < deadline and not any(is_image(o[0]) for o in job.outputs()):
        time.sleep(0.05)  # the first depth preview: a window is done
    light = client.predict("room A · 48 frames", api_name="/videodepth_example")  # not queued behind the run
    assert str(light.get("path", light) if isinstance(light, dict) else light).endswith(".mp4") and not job.done()
    assert client.predict(api_name="/videodepth_stop") == "Stopping…"
    status = job.result(timeout=120)[1]
    assert status.startswith("Stopped by the user after") and not status.startswith("Stopped by the user after 0 "), status
    _, status, video, files, _, summary = client.predict(api_name="/videodepth_resume")
    assert status.startswith("**Done:** 120 frame(s)") and summary["resumed_at_frame"] > 0
    assert np.load(next(f for f in files if f.endswith(".npz")))["disparity"].shape == (120, 64, 64)
