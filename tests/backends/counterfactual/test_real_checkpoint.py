"""The published I2SB checkpoint format loads into our ADM U-Net (tiny random config of the same class)."""

import pytest
import torch

from backends.common.errors import InputError
from backends.counterfactual.adm import ADMUNet
from backends.counterfactual.i2sb_checkpoint import I2SBNetwork, load_i2sb_checkpoint
from backends.counterfactual.networks import ShapeClassifier
from backends.counterfactual.pipeline import RCSBPipeline
from backends.counterfactual.schedule import BridgeSchedule

TINY = dict(image_size=32, model_channels=32, num_res_blocks=1, attention_resolutions=(8,), channel_mult=(1, 2, 2),
            num_head_channels=16)


def full_size_parameter_count():
    with torch.device("meta"):  # counted, not allocated (2.2 GB)
        return sum(p.numel() for p in ADMUNet(image_size=256).parameters())


def write_i2sb_checkpoint(path, net: I2SBNetwork, ema_shift: float = 0.0):
    """As I2SB's runner saves it: the net's state dict plus torch_ema's state."""
    shadow = [p.detach().clone() + ema_shift for p in net.parameters()]
    torch.save({"net": net.state_dict(), "ema": {"decay": 0.9999, "num_updates": 3, "shadow_params": shadow,
                                                 "collected_params": None}, "sched": {}}, path)


def test_default_config_is_the_adm_256_network():
    assert 552_000_000 < full_size_parameter_count() < 553_000_000  # ADM 256² unconditional, 3 output channels


def test_checkpoint_round_trip_uses_ema_weights(tmp_path):
    torch.manual_seed(0)
    net = I2SBNetwork(ADMUNet(**TINY))
    write_i2sb_checkpoint(tmp_path / "latest.pt", net, ema_shift=0.01)
    loaded = load_i2sb_checkpoint(tmp_path / "latest.pt", **{k: v for k, v in TINY.items() if k != "model_channels"})
    raw = load_i2sb_checkpoint(tmp_path / "latest.pt", use_ema=False, **{k: v for k, v in TINY.items() if k != "model_channels"})
    for (name, p), q in zip(loaded.named_parameters(), net.parameters(), strict=True):
        assert torch.allclose(p, q + 0.01), name
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        assert torch.allclose(raw(x, torch.tensor([5, 900])), net(x, torch.tensor([5, 900])), atol=1e-5)


def test_time_input_is_noise_level_of_the_step():
    net = I2SBNetwork(ADMUNet(**TINY))
    assert net.noise_levels[0] == pytest.approx(0.1) and net.noise_levels[-1] == pytest.approx(1000.0)


def test_rcsb_runs_on_the_real_architecture(tmp_path):
    torch.manual_seed(1)
    net = I2SBNetwork(ADMUNet(**TINY))
    clf = ShapeClassifier(num_classes=5, width=4)
    pipe = RCSBPipeline(net, clf, BridgeSchedule(1000))
    x = torch.rand(1, 3, 32, 32) * 2 - 1
    m = torch.zeros(1, 1, 32, 32)
    m[..., 8:24, 8:24] = 1
    out = pipe(x, m, target=2, num_inference_steps=3, generator=torch.Generator().manual_seed(0)).images
    assert torch.equal(out[..., :8, :], x[..., :8, :])


def test_foreign_files_are_clear_errors(tmp_path):
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(InputError, match="not a readable I2SB checkpoint"):
        load_i2sb_checkpoint(tmp_path / "junk.pt")
    torch.save({"net": {"conv.weight": torch.zeros(1)}}, tmp_path / "other.pt")
    with pytest.raises(InputError, match="no I2SB network weights"):
        load_i2sb_checkpoint(tmp_path / "other.pt")
