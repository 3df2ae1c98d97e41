"""The System tab's actions (``backends.common.system_actions``): the speed test and a model's download run
as actions, end in their typed results and write a run card that records them."""

import json

import pytest

from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken, ProgressEvent
from backends.common.speedtest import SpeedTestRequest, SpeedTestResult
from backends.common.system_actions import DOWNLOAD, SPEED_TEST, DownloadRequest


def test_the_speed_test_action_measures_and_its_card_records_the_measurement(tmp_path):
    *events, result = list(SPEED_TEST.run(SpeedTestRequest(size=32, repeats=3)))
    assert isinstance(result, SpeedTestResult) and result.gflops > 0 and result.repeats == 3
    assert len([e for e in events if isinstance(e, ProgressEvent)]) == 3
    card = json.loads(SPEED_TEST.write_run(SpeedTestRequest(size=32, repeats=3), result, tmp_path)["run"].read_text())
    assert card["action"] == "speed_test" and card["capability"] == "system"
    assert card["request"] == {"size": 32, "repeats": 3, "device": None} and card["result"]["gflops"] == result.gflops
    with pytest.raises(InputError, match="16 to 8192"):
        list(SPEED_TEST.run(SpeedTestRequest(size=8, repeats=3)))
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        list(SPEED_TEST.run(SpeedTestRequest(size=32, repeats=50), token))


def test_the_download_action_fetches_a_hub_model_and_refuses_others(hub, tmp_path, monkeypatch):
    from backends.common.registry import default_registry, model_status
    from backends.common.settings import get_settings, reset_settings
    from tests.hubserver import published

    monkeypatch.setenv("ICLR25_MODELS_DIR", str(tmp_path / "models"))
    reset_settings()
    try:
        spec = default_registry().get("controlnet-sd15-depth")
        repo = hub.repos[spec.location] = published(spec)
        *events, result = list(DOWNLOAD.run(DownloadRequest(spec.id)))
        assert events[0].message.startswith("Licence of controlnet-sd15-depth")
        assert sorted(result.files) == sorted(spec.files) and model_status(spec, get_settings()).present
        folder = get_settings().models_dir / spec.location
        assert all((folder / n).read_bytes() == repo.files[n] for n in spec.files)
        card = json.loads(DOWNLOAD.write_run(DownloadRequest(spec.id), result, tmp_path / "card")["run"].read_text())
        assert card["request"] == {"model_id": spec.id, "fp16": False} and card["result"]["files"] == result.files
        with pytest.raises(InputError, match="Choose a model to download"):
            list(DOWNLOAD.run(DownloadRequest("counterfactual-bridge")))  # shipped with the suite, not on the Hub
    finally:
        reset_settings()
