"""The System tab's actions (``backends.common.system_actions``): the speed test and a model's download run
as actions, end in their typed results and write a run card that records them."""

import json

import pytest

from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken, ProgressEvent
from backends.common.speedtest import SpeedTestRequest, SpeedTestResult
from backends.common.system_actions import DOWNLOAD, SPEED_TEST, DownloadRequest


def test_the_speed_test_action_measures_and_its_card_records_the_measurement(tmp_path):
    *events, result = list(SPEED_TEST.run(SpeedTestRequest(size=64, repeats=3)))
    assert isinstance(result, SpeedTestResult) and result.gflops > 0 and result.repeats == 3
    assert len([e for e in events if isinstance(e, ProgressEvent)]) == 3
    card = json.loads(SPEED_TEST.write_run(SpeedTestRequest(size=64, repeats=3), result, tmp_path)["run"].read_text())
    assert card["action"] == "speed_test" and card["capability"] == "system"
    assert card["request"] == {"size": 64, "repeats": 3, "device": None} and card["result"]["gflops"] == result.gflops
    with pytest.raises(InputError, match="Matrix size must be a whole number from 64 to 4096, got 8"):
        list(SPEED_TEST.run(SpeedTestRequest(size=8, repeats=3)))
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        list(SPEED_TEST.run(SpeedTestRequest(size=64, repeats=50), token))


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
        assert card["request"] == {"model_id": spec.id, "fp16": False, "then": []}
        assert card["result"]["files"] == result.files
        with pytest.raises(InputError, match="Choose a model to download"):
            list(DOWNLOAD.run(DownloadRequest("counterfactual-bridge")))  # shipped with the suite, not on the Hub
    finally:
        reset_settings()


def test_one_download_fetches_every_part_a_tabs_model_needs_in_order(hub, tmp_path, monkeypatch):
    from backends.common.download import DownloadProgress
    from backends.common.registry import default_registry, model_status
    from backends.common.settings import get_settings, reset_settings
    from tests.hubserver import published

    monkeypatch.setenv("ICLR25_MODELS_DIR", str(tmp_path / "models"))
    reset_settings()
    try:
        first, second = (default_registry().get(m) for m in ("controlnet-sd15-depth", "loose-control-3dbox"))
        for spec in (first, second):
            hub.repos[spec.location] = published(spec)
        *events, result = list(DOWNLOAD.run(DownloadRequest(first.id, then=(second.id,))))
        licences = [e.preview for e in events if isinstance(e.preview, str)]
        assert [line.split(":")[0] for line in licences] == [f"Licence of {first.id}", f"Licence of {second.id}"]
        progress = [e.preview for e in events if isinstance(e.preview, DownloadProgress)]
        assert {p.licence for p in progress if p.model_id == second.id} == {licences[1]}  # shown above its bytes
        fractions = [e.fraction for e in events]
        assert fractions == sorted(fractions) and fractions[-1] == 1.0
        assert result.model_id == first.id and [r.model_id for r in result.also] == [second.id]
        assert model_status(first, get_settings()).present and model_status(second, get_settings()).present
        with pytest.raises(InputError, match="not counterfactual-bridge"):
            list(DOWNLOAD.run(DownloadRequest(first.id, then=("counterfactual-bridge",))))
    finally:
        reset_settings()
