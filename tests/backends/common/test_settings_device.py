import pytest
import torch

from backends.common.device import device_report, select_device, select_dtype
from backends.common.errors import InputError
from backends.common.settings import Settings, configure, get_settings


def test_settings_read_environment_prefix(monkeypatch, tmp_path):
    monkeypatch.setenv("ICLR25_DEVICE", "cpu")
    monkeypatch.setenv("ICLR25_MODELS_DIR", str(tmp_path))
    monkeypatch.setenv("ICLR25_OFFLINE", "false")
    s = Settings()
    assert s.device == "cpu" and s.models_dir == tmp_path and s.offline is False


def test_settings_default_to_offline_and_loopback(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    s = Settings()
    assert s.offline is True
    assert s.host == "127.0.0.1" and s.port == 7860


def test_settings_reject_unknown_device():
    with pytest.raises(ValueError, match="unknown device"):
        Settings(device="tpu")


def test_configure_overrides_only_given_fields(tmp_path):
    before = get_settings()
    after = configure(models_dir=tmp_path, device=None)
    assert after.models_dir == tmp_path
    assert after.device == before.device
    assert get_settings() is after


def test_auto_device_is_cpu_here_and_float32():
    if torch.cuda.is_available():
        pytest.skip("machine has CUDA")
    device = select_device("auto")
    assert device.type == "cpu"
    assert select_dtype(device) == torch.float32
    assert select_dtype(device, "bfloat16") == torch.bfloat16


def test_settings_device_override_is_used():
    configure(device="cpu")
    assert select_device().type == "cpu"


def test_unavailable_cuda_is_a_clear_error_not_a_fallback():
    if torch.cuda.is_available():
        pytest.skip("machine has CUDA")
    with pytest.raises(InputError, match="CUDA is not available"):
        select_device("cuda:0")


def test_device_report_describes_this_machine():
    report = device_report()
    assert report.selected in {"cpu", "cuda", "mps"}
    assert report.cpu_count >= 1 and report.cpu_name
    assert report.ram_total_gb is None or report.ram_total_gb > 0.5
    assert report.selected.split(":")[0] in report.summary()
