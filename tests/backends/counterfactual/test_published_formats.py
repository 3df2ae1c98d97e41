"""The Counterfactual loaders against the published formats recorded from the authors' code
(training/published_formats/i2sb.py, resnet50.py): names and shapes at full size on the meta device,
and the same output as the authors' network for the same seeded weights."""

import json

import pytest
import torch
from safetensors import safe_open

from backends.common.errors import InputError
from backends.common.published_formats import ASSETS, compare_format, read_fixture
from backends.counterfactual.i2sb_checkpoint import adm_config_from_state, network_from_checkpoint
from backends.counterfactual.loading import classifier_from_state, load_classifier
from backends.counterfactual.models import SPECS
from backends.counterfactual.published import PUBLISHED_MODELS, expected_format, seeded_weights

I2SB = "i2sb-imagenet-freeform"
RESNET = "resnet50-imagenet"


def meta_state(shapes):
    return {k: torch.empty(s, device="meta") for k, s in shapes.items()}


def forward_fixture(model_id):
    with safe_open(str(ASSETS / f"{model_id}.forward.safetensors"), "pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, f.metadata()


@pytest.mark.parametrize("model_id", PUBLISHED_MODELS)
def test_loader_takes_every_published_name_and_shape(model_id):
    published = read_fixture(model_id)
    expected = expected_format(model_id)
    assert published.components and set(published.components) == set(expected)
    mismatches = {c: m.summary() for c, m in compare_format(published, expected).items() if m}
    assert not mismatches, mismatches
    assert "@" in published.source  # repository@commit it was read from


def test_i2sb_fixture_has_both_layouts_and_cond_x1():
    c = read_fixture(I2SB).components
    assert c["net"]["diffusion_model.input_blocks.0.0.weight"] == (256, 3, 3, 3)
    assert c["net_cond_x1"]["diffusion_model.input_blocks.0.0.weight"] == (256, 6, 3, 3)
    assert c["adm"]["input_blocks.0.0.weight"] == (256, 3, 3, 3) and c["adm_learn_sigma"]["out.2.weight"][0] == 6
    assert len(c["ema"]) == len(c["net"])  # every net entry is a parameter: the EMA shadows all of them


@pytest.mark.parametrize(("suffix", "in_channels"), [("", 3), ("_cond_x1", 6)])
def test_i2sb_latest_pt_builds_the_full_size_network(suffix, in_channels):
    """latest.pt as I2SB's runner writes it, at full size on the meta device, EMA included."""
    c = read_fixture(I2SB).components
    shadow = [torch.empty(s, device="meta") for _, s in sorted(c[f"ema{suffix}"].items(), key=lambda kv: int(kv[0].split(".")[1]))]
    ckpt = {"net": meta_state(c[f"net{suffix}"]), "ema": {"decay": 0.99, "num_updates": 1, "shadow_params": shadow,
                                                          "collected_params": None}, "optimizer": {}, "sched": None}
    net = network_from_checkpoint(ckpt)
    config = net.diffusion_model.config
    assert config == dict(image_size=256, in_channels=in_channels, model_channels=256, out_channels=3, num_res_blocks=2,
                          attention_resolutions=(32, 16, 8), channel_mult=(1, 1, 2, 2, 4, 4), num_heads=4,
                          num_head_channels=64)
    assert net.cond_x1 == (in_channels == 6)
    assert all(p.is_meta for p in net.parameters())  # assigned, never allocated
    assert 552_000_000 < sum(p.numel() for p in net.parameters()) < 553_000_000


@pytest.mark.parametrize("component", ["adm", "adm_cond_x1", "adm_learn_sigma"])
def test_i2sb_bare_adm_layouts_load(component):
    """The ADM state dicts I2SB initialises from; a learned-sigma file keeps its 3 ε channels."""
    net = network_from_checkpoint(meta_state(read_fixture(I2SB).components[component]))
    assert net.diffusion_model.config["out_channels"] == 3
    assert net.diffusion_model.out[2].weight.shape == (3, 256, 3, 3)


def test_i2sb_config_read_off_the_checkpoint_names_what_differs():
    c = read_fixture(I2SB).components["adm"]
    assert adm_config_from_state(meta_state(c))["channel_mult"] == (1, 1, 2, 2, 4, 4)
    short = {k: v for k, v in c.items() if not k.startswith("middle_block.1.")}
    with pytest.raises(InputError, match="does not match the ADM architecture"):
        network_from_checkpoint(meta_state(short))
    wrong = dict(c, **{"out.0.weight": (128,)})
    with pytest.raises(InputError, match="does not match"):
        network_from_checkpoint(meta_state(wrong))


@pytest.mark.parametrize("name", ["plain", "cond_x1"])
def test_i2sb_network_gives_the_authors_output(name):
    """I2SB's Image256Net at a small config, seeded weights: same ε̂ from the project's network."""
    tensors, meta = forward_fixture(I2SB)
    weights = seeded_weights(json.loads(meta[f"shapes_{name}"]), seed=0)
    net = network_from_checkpoint({"net": weights}, num_head_channels=16)
    assert net.cond_x1 == (name == "cond_x1")
    net.x1 = tensors["x1"]
    with torch.no_grad():
        out = net(tensors["xt"], tensors["steps"])
    assert torch.allclose(out, tensors[f"out_{name}"], atol=1e-5), (out - tensors[f"out_{name}"]).abs().max()


def test_i2sb_ema_is_read_in_the_authors_parameter_order():
    """'net' holds other weights; the EMA's shadow list, in their parameters() order, must win."""
    tensors, meta = forward_fixture(I2SB)
    weights = seeded_weights(json.loads(meta["shapes_plain"]), seed=0)
    order = json.loads(meta["parameters_plain"])
    ckpt = {"net": seeded_weights(json.loads(meta["shapes_plain"]), seed=7),
            "ema": {"shadow_params": [weights[n] for n in order]}}
    with torch.no_grad():
        ema = network_from_checkpoint(ckpt, num_head_channels=16)(tensors["xt"], tensors["steps"])
        raw = network_from_checkpoint(ckpt, use_ema=False, num_head_channels=16)(tensors["xt"], tensors["steps"])
    assert torch.allclose(ema, tensors["out_plain"], atol=1e-5)
    assert not torch.allclose(raw, tensors["out_plain"], atol=1e-2)


def test_resnet50_builds_at_full_size_from_the_published_names():
    model, categories = classifier_from_state("resnet50", meta_state(read_fixture(RESNET).components["model"]))
    assert all(p.is_meta for p in model.model.parameters())
    assert 25_500_000 < sum(p.numel() for p in model.model.parameters()) < 25_600_000
    assert len(categories) == 1000 and categories[0] == "tench" and categories[-1] == "toilet tissue"
    with pytest.raises(InputError, match="not a torchvision resnet50 state dict"):
        classifier_from_state("resnet50", meta_state({"fc.weight": (1000, 2048)}))


def test_resnet50_file_loads_in_the_default_install_and_gives_torchvisions_output(tmp_path):
    """A torch.save(resnet50().state_dict()) file through the registry's loader; no torchvision needed."""
    tensors, meta = forward_fixture(RESNET)
    spec = next(s for s in SPECS if s.id == RESNET)
    torch.save(seeded_weights(json.loads(meta["shapes"]), seed=0), tmp_path / spec.files[0])
    clf, categories = load_classifier(spec, tmp_path)
    with torch.no_grad():
        logits = clf.model(tensors["x"])
        assert torch.allclose(clf(tensors["x"] * clf.std + clf.mean), logits, atol=1e-4)  # [0, 1] input, normalised
    assert torch.allclose(logits, tensors["logits"], atol=1e-5), (logits - tensors["logits"]).abs().max()
    assert len(categories) == 1000


def test_rcsb_samples_with_a_cond_x1_bridge():
    """A --cond-x1 network gets x1 (the noise-filled image) from the pipeline, as I2SB's sampler passes it."""
    from backends.counterfactual.adm import ADMUNet
    from backends.counterfactual.i2sb_checkpoint import I2SBNetwork
    from backends.counterfactual.networks import ShapeClassifier
    from backends.counterfactual.pipeline import RCSBPipeline

    torch.manual_seed(0)
    net = I2SBNetwork(ADMUNet(image_size=32, in_channels=6, model_channels=32, num_res_blocks=1,
                              attention_resolutions=(8,), channel_mult=(1, 2), num_head_channels=16))
    pipe = RCSBPipeline(net, ShapeClassifier(num_classes=5, width=4))
    x = torch.rand(1, 3, 32, 32) * 2 - 1
    m = torch.zeros(1, 1, 32, 32)
    m[..., 8:24, 8:24] = 1
    out = pipe(x, m, target=2, num_inference_steps=3, generator=torch.Generator().manual_seed(0)).images
    assert torch.equal(out[..., :8, :], x[..., :8, :]) and net.x1.shape == x.shape
    assert torch.equal(net.x1[..., :8, :], x[..., :8, :]) and not torch.equal(net.x1, x)
