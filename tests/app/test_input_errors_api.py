"""Gradio's own errors while it reads a request (before any handler runs) reach the person without a server
path: a path that was never uploaded, a file a component cannot decode."""

import json
import os

import httpx
from gradio_client import handle_file


def raw_call(url: str, api: str, data: list) -> str:
    """Call an endpoint with a hand-made payload (gradio_client would upload a local path first)."""
    r = httpx.post(f"{url}/gradio_api/call/{api}", json={"data": data}, timeout=60)
    r.raise_for_status()
    with httpx.stream("GET", f"{url}/gradio_api/call/{api}/{r.json()['event_id']}", timeout=60) as s:
        return "\n".join(s.iter_lines())


def test_a_path_that_was_not_uploaded_is_refused_without_naming_the_server_folders(live_app):
    _, url = live_app
    for path in ("game.json", "../secret.json", "/etc/passwd"):
        out = raw_call(url, "gops_reload", [{"path": path, "meta": {"_type": "gradio.FileData"}}])
        error = json.loads(out.split("data: ", 1)[1])["error"]
        assert "was not uploaded to this app" in error
        assert os.getcwd() not in error and "/etc" not in error and "Cannot move" not in error


def test_an_image_a_component_cannot_read_is_an_error_without_the_cache_path(client, tmp_path):
    from gradio.utils import get_upload_folder

    bad = tmp_path / "corrupt.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 200)
    value = {"background": handle_file(str(bad)), "layers": [], "composite": None, "id": None}
    try:
        client.predict(value, 0.3, 4, "counterfactual-bridge", "counterfactual-classifier",
                       api_name="/counterfactual_region")
    except Exception as e:  # noqa: BLE001
        message = str(e)
    else:
        raise AssertionError("a corrupt image was accepted")
    assert "imageeditor" in message and "uploads/" in message
    assert get_upload_folder() not in message and "/tmp/" not in message
    assert client.predict(api_name="/system_info")["device"]["selected"]  # the server keeps serving
