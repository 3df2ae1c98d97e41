"""One user's light action never breaks another's running job, in every tab: two clients, one runs the
heavy job, the other fires the tab's estimate / preview / light action again and again meanwhile, and
both get correct results. (Video Depth's estimate stepped the run's scheduler from another thread:
"IndexError: index 2 is out of bounds for dimension 0 with size 2".)"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from gradio_client import Client, handle_file
from gradio_client.utils import Status
from PIL import Image

from bench.sample_requests import CF_EXAMPLES, LAYOUT, counterfactual_editor
from bench.sample_requests import CF_MODELS as CF
from bench.sample_requests import NEUTRAL_POSE as NEUTRAL

RUNNING = (Status.PROCESSING, Status.PROGRESS, Status.ITERATING)


def beside(url: str, heavy, light, max_light: int = 12) -> tuple[object, list]:
    """Submit ``heavy(client)`` from one client; once it runs, call ``light(client, i)`` from another until
    the job ends (at most ``max_light`` times). Returns the job's result and the light results given while
    the job was still running."""
    a, b = Client(url, verbose=False), Client(url, verbose=False)
    try:
        job = heavy(a)
        while job.status().code not in RUNNING and not job.done():  # pytest-timeout guards a job that never starts
            time.sleep(0.05)
        during = []
        for i in range(max_light):
            if job.done():
                break
            during.append(light(b, i))
        return job.result(), during
    finally:
        a.close()
        b.close()


def test_video_depth_estimates_while_a_run_goes(live_app):
    from backends.videodepth.examples import example_clip

    clip = handle_file(str(example_clip("room A · 48 frames")))

    def settings(steps, max_frames=48, baseline=0):
        return ["videodepth-embedded", 64, steps, 12, max_frames, "Spectral", baseline, 0, "zero", "auto"]

    result, estimates = beside(
        live_app[1],
        lambda c: c.submit(clip, *settings(3), api_name="/videodepth_run"),
        # each estimate times the model on a new number of frames: a real pipeline call, not a cached figure
        lambda c, i: c.predict(clip, *settings(1 + i % 3, max_frames=15 - i), api_name="/videodepth_estimate"))
    _, status, _, files, _, summary = result
    assert status.startswith("**Done:** 48 frame(s)") and summary["frames"] == 48
    assert np.load(next(f for f in files if f.endswith(".npz")))["disparity"].shape == (48, 64, 64)
    assert estimates and all(f"{15 - i} frame(s)" in e for i, e in enumerate(estimates))


def test_counterfactual_predictions_while_a_generation_goes(live_app, tmp_path):
    editor = counterfactual_editor(tmp_path)

    def light(c, i):
        if i % 2:
            return c.predict(handle_file(str(CF_EXAMPLES / "torus.png")), *CF, api_name="/counterfactual_classify")[1]
        return c.predict(editor, 0.25, 4, *CF, api_name="/counterfactual_region")[1]

    result, during = beside(
        live_app[1], lambda c: c.submit(editor, "sphere", 2, 40, 1.5, 0.6, 0, *CF, api_name="/counterfactual_generate"),
        light)
    summary = result[3]
    assert len(summary["samples"]) == 2 and summary["target"] == "sphere"
    assert during and all(d["label"] == "torus" for d in during[1::2])
    assert all(Path(d if isinstance(d, str) else d["path"]).is_file() for d in during[::2])


def test_layout3d_previews_while_a_scene_generates(live_app):
    layout = json.dumps(LAYOUT)
    result, previews = beside(
        live_app[1],
        lambda c: c.submit(layout, "layout3d-embedded", 4, 8, 3.0, "bas", 0.9, 0.5, "multiply", False,
                           api_name="/layout3d_generate"),
        lambda c, i: c.predict(layout, api_name="/layout3d_depth"))
    assert [s["kind"] for s in result[4]["stages"]] == ["empty", "insert"]
    assert previews and all("valid layout" in p[2] for p in previews)
    assert all(np.asarray(Image.open(p[1])).max() > 200 for p in previews)


def test_text_in_image_model_info_while_generating(live_app):
    result, infos = beside(
        live_app[1],
        lambda c: c.submit("textedit-embedded", "a sign that says", "cat", 0, 20, api_name="/textedit_generate"),
        lambda c, i: c.predict("textedit-embedded", api_name="/textedit_model_info"))
    assert "textedit-embedded" in result[3] and "rapidocr" in result[2]
    assert infos and all("Model **textedit-embedded**" in info[0] for info in infos)


def test_avatar_renders_while_another_user_reconstructs(live_app):
    from backends.avatar import body
    from backends.common.settings import Settings

    body.body_model(Settings())  # anny's one-time build from the user's cache, as the other Avatar tests do
    url = live_app[1]
    viewer = Client(url, verbose=False)
    try:  # this user has an avatar already; another one starts reconstructing
        viewer.predict("synthetic", 1, 1, 1, None, None, None, *NEUTRAL, api_name="/avatar_reconstruct")
        a = Client(url, verbose=False)
        job = a.submit("synthetic", 0, 5, 5, None, None, None, *NEUTRAL, api_name="/avatar_reconstruct")
        while job.status().code not in RUNNING and not job.done():  # pytest-timeout guards a job that never starts
            time.sleep(0.05)
        renders = []
        while not job.done() and len(renders) < 12:
            renders.append(viewer.predict(30 * (len(renders) % 6), 256, *NEUTRAL, api_name="/avatar_render"))
        gallery, status, payload, _ = job.result()
        a.close()
    finally:
        viewer.close()
    assert len(gallery) == 5 and "Gaussians in" in status and json.loads(payload)["count"] > 1000
    assert renders and all(np.asarray(Image.open(r[0])).shape[:2] == (256, 256) and "ms" in r[2] for r in renders)
