"""The app's start does no throw-away work: Gradio's FastAPI app is built once, by ``launch``, and the page it
serves still lists every tab (the config built lazily is the whole one)."""

from __future__ import annotations

import urllib.request

import gradio.routes

from app.main import build_app, launch
from tests.conftest import free_port


def test_the_fastapi_app_is_built_once_and_the_page_has_every_tab(monkeypatch):
    builds = []
    original = gradio.routes.App.create_app

    def counted(blocks, *args, **kwargs):
        builds.append(kwargs.get("mcp_server"))
        return original(blocks, *args, **kwargs)

    monkeypatch.setattr(gradio.routes.App, "create_app", staticmethod(counted))
    demo = build_app()
    assert builds == []  # neither the with-block's exit nor queue() built one
    port = free_port()
    _, url, _ = launch(demo, server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        assert len(builds) == 1
        page = urllib.request.urlopen(url, timeout=60).read().decode()
        for name in ("tab-layout3d", "tab-games", "tab-ot", "tab-system"):
            assert name in page
        assert demo.app is demo.server_app  # the one that serves
    finally:
        demo.close()
