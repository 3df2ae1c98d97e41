"""A freshly started server takes the first action of every tab at the same moment, and every one succeeds.

Each start is a new process with an empty models folder and temp folder of its own (anny's one-time
build is linked in from the user's cache: minutes to redo, and not what is tested): the heavy imports,
every model build and the first pipeline calls all meet here. Before the build lock, 2 of 5 starts
failed with meta tensors ("Cannot copy out of meta tensor") or a half-imported diffusers, and the
broken model then stayed cached.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from gradio_client import Client, handle_file

from bench.live_server import LiveServer
from bench.sample_requests import (
    CF_EXAMPLES,
    CF_MODELS,
    LAYOUT,
    NEUTRAL_POSE,
    counterfactual_editor,
    videodepth_settings,
)

STARTS = 1  # one fresh server start (~90 s on 2 cores: the two of earlier sessions took 182 s of a 25-minute suite)


def first_actions(url: str, clip: str, tmp: Path) -> dict:
    """Every tab's first action, each from its own client, all submitted at once; name → check(result)."""
    # generous HTTP timeouts: while the server imports torch & co. (GIL-bound) a request may take seconds
    clients = {name: Client(url, verbose=False, httpx_kwargs={"timeout": 180}) for name in
               ("avatar", "videodepth", "textedit", "layout3d", "cf-classify", "cf-generate", "gops")}
    editor, cf = counterfactual_editor(tmp), CF_MODELS

    def gops(c):
        board, *_ = c.predict(5, "discard", "descending", "greedy", 100, 0, api_name="/gops_new")
        board, *_ = c.predict(5, api_name="/gops_play")
        return board

    calls = {
        "avatar": lambda c: c.predict("synthetic", 0, 2, 1, None, None, None, *NEUTRAL_POSE,
                                    api_name="/avatar_reconstruct"),
        "videodepth": lambda c: c.predict(handle_file(clip), *videodepth_settings(), api_name="/videodepth_estimate"),
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
        server = LiveServer(run / "models", run / "gradio", log=run / "server.log")  # empty folders of its own
        server.start()
        try:
            problems = check(first_actions(server.url, clip, run))
            failures += [f"start {start + 1}: {p}" for p in problems]
        finally:
            server.stop()
    assert not failures, "\n".join(failures)
