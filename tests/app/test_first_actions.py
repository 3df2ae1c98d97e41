"""A freshly started server takes the first action of every tab at the same moment, and every one succeeds.

Each start is a new process with an empty models folder and temp folder of its own (anny's one-time
build is linked in from the user's cache: minutes to redo, and not what is tested): the heavy imports,
every model build and the first pipeline calls all meet here. Before the build lock, 2 of 5 starts
failed with meta tensors ("Cannot copy out of meta tensor") or a half-imported diffusers, and the
broken model then stayed cached.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from gradio_client import Client, handle_file

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
STARTS = 2  # fresh server starts (each ~30-60 s on two busy cores)
NEUTRAL = [0, 45, 45, 0, 0, 5, 5, 0, 0, 5, 5, 0, 0, 0, 0]
CF_EXAMPLES = ROOT / "app" / "static" / "examples" / "counterfactual"
LAYOUT = {"scene_prompt": "a green lawn under a pale blue sky", "boxes": [
    {"prompt": "a red cube", "center": [-0.2, 1.0, 0.35], "size": [0.7, 0.7, 0.7], "yaw_deg": 0}]}


def _link_anny_cache(models_dir: Path) -> None:
    from backends.avatar import body
    from backends.common.settings import Settings

    user_cache = body.anny_cache_dir(Settings(models_dir=Settings().models_dir))
    if not user_cache.is_dir():
        return
    mine = body.anny_cache_dir(Settings(models_dir=models_dir))
    mine.mkdir(parents=True)
    for entry in user_cache.iterdir():  # anny's built data only (its version folders); nothing derived from it
        if entry.is_dir():
            (mine / entry.name).symlink_to(entry, target_is_directory=True)


def start_server(tmp: Path) -> tuple[subprocess.Popen, str]:
    """``launch(build_app())`` in a new process on a free port, with its own empty models and temp folders."""
    port = free_port()
    models, temp = tmp / "models", tmp / "gradio"
    models.mkdir()
    temp.mkdir()
    _link_anny_cache(models)
    env = {**os.environ, "ICLR25_MODELS_DIR": str(models), "GRADIO_TEMP_DIR": str(temp), "HF_HUB_OFFLINE": "1",
           "GRADIO_ANALYTICS_ENABLED": "False", "ICLR25_PORT": str(port)}
    code = "from app.main import build_app, launch; launch(build_app(), quiet=True)"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited: {proc.stderr.read()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise TimeoutError("the server did not answer within 120 s")


def first_actions(url: str, clip: str, tmp: Path) -> dict:
    """Every tab's first action, each from its own client, all submitted at once; name → check(result)."""
    import numpy as np
    from PIL import Image

    # generous HTTP timeouts: while the server imports torch & co. (GIL-bound) a request may take seconds
    clients = {name: Client(url, verbose=False, httpx_kwargs={"timeout": 180}) for name in
               ("avatar", "videodepth", "textedit", "layout3d", "cf-classify", "cf-generate", "gops")}
    small = np.asarray(Image.open(CF_EXAMPLES / "cube.png").convert("RGB"))
    Image.fromarray(np.repeat(np.repeat(small, 8, 0), 8, 1)).save(tmp / "bg.png")
    layer = np.zeros((small.shape[0] * 8, small.shape[1] * 8, 4), np.uint8)
    layer[64:224, 48:208] = (255, 0, 80, 255)
    Image.fromarray(layer, "RGBA").save(tmp / "layer.png")
    editor = {"background": handle_file(str(tmp / "bg.png")), "layers": [handle_file(str(tmp / "layer.png"))],
              "composite": None}
    cf = ("counterfactual-bridge", "counterfactual-classifier")

    def gops(c):
        board, *_ = c.predict(5, "discard", "descending", "greedy", 100, 0, api_name="/gops_new")
        board, *_ = c.predict("5", api_name="/gops_play")
        return board

    calls = {
        "avatar": lambda c: c.predict("synthetic", 0, 2, 1, None, None, None, *NEUTRAL, api_name="/avatar_reconstruct"),
        "videodepth": lambda c: c.predict(handle_file(clip), "videodepth-embedded", 64, 1, 12, 16, "Spectral", 0, 0,
                                          "zero", "auto", api_name="/videodepth_estimate"),
        "textedit": lambda c: c.predict("textedit-embedded", "a sign that says", "cat", 0, 4,
                                        api_name="/textedit_generate"),
        "layout3d": lambda c: c.predict(json.dumps(LAYOUT), "layout3d-embedded", 3, 3, 3.0, "bas", 0.9, 0.5,
                                        "multiply", False, api_name="/layout3d_generate"),
        "cf-classify": lambda c: c.predict(handle_file(str(CF_EXAMPLES / "cube.png")), *cf,
                                           api_name="/counterfactual_classify"),
        "cf-generate": lambda c: c.predict(editor, "sphere", 1, 6, 1.5, 0.6, 0, *cf, api_name="/counterfactual_generate"),
        "gops": gops,
    }
    try:
        with ThreadPoolExecutor(len(calls)) as pool:
            futures = {name: pool.submit(call, clients[name]) for name, call in calls.items()}
            out = {}
            for name, f in futures.items():
                try:
                    out[name] = f.result(timeout=400)
                except Exception as e:  # noqa: BLE001 — collected: every failure is reported at once
                    out[name] = e
            return out
    finally:
        for c in clients.values():
            c.close()


def check(results: dict) -> list[str]:
    """What went wrong (empty when every action gave a real result)."""
    problems = [f"{name}: {type(r).__name__}: {r}" for name, r in results.items() if isinstance(r, BaseException)]
    if problems:
        return problems
    gallery, status, payload, _ = results["avatar"]
    assert len(gallery) == 2 and "Gaussians in" in status and json.loads(payload)["count"] > 1000
    assert "16 frame(s)" in results["videodepth"] and "64×64" in results["videodepth"]
    assert "textedit-embedded" in results["textedit"][3]
    assert [s["kind"] for s in results["layout3d"][4]["stages"]] == ["empty", "insert"]
    assert results["cf-classify"][1]["label"] == "cube"
    summary = results["cf-generate"][3]
    assert len(summary["samples"]) == 1 and summary["target"] == "sphere"
    assert "Prize: **4**" in results["gops"]
    return []


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_tabs_first_action_at_the_same_moment_on_fresh_servers(tmp_path):
    from backends.videodepth.examples import example_clip

    clip = str(example_clip("room A · 48 frames"))
    failures = []
    for start in range(STARTS):
        run = tmp_path / f"start{start}"
        run.mkdir()
        proc, url = start_server(run)
        try:
            problems = check(first_actions(url, clip, run))
            failures += [f"start {start + 1}: {p}" for p in problems]
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
    assert not failures, "\n".join(failures)
