"""Record I2SB's published checkpoint layouts from the authors' code (NVlabs/I2SB), and a forward fixture.

    python -m training.published_formats.i2sb --authors-code DIR   # DIR: NVlabs/I2SB unpacked

Builds THEIR ``i2sb.network.Image256Net`` (``guided_diffusion.script_util.create_model``) on the meta
device with the config their ``ckpt_util`` pickles for it (``create_argparser()`` with
``learn_sigma=False``; ``in_channels=6`` for ``--cond-x1``) and THEIR EMA (``torch_ema``, as
``Runner`` makes it), and writes ``assets/published-formats/i2sb-imagenet-freeform.json.gz``.

Then builds the same network class at a small config with ``seeded_weights`` and writes the input and
their output (``….forward.safetensors``), so the project's network is checked against it.

Needs ``torch_ema`` (``pip install torch-ema``). Modules their package imports only for training
(``ipdb``, ``easydict``, ``wandb``, tensorboard, ``prefetch_generator``, and ``i2sb/__init__``'s runner)
are replaced by empty modules here, in this script only, when they are not installed.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
import types
from pathlib import Path

import torch
from safetensors.torch import save_file

from backends.common.published_formats import ASSETS, PublishedFormat, shapes_of, write_fixture
from backends.counterfactual.published import seeded_weights
from training.published_formats import commit_of

MODEL_ID = "i2sb-imagenet-freeform"
FORWARD_FIXTURE = ASSETS / f"{MODEL_ID}.forward.safetensors"
# Small config of the same class for the forward check, with every block kind of the 256² model:
# scale-shift ResBlocks, ResBlock up/down sampling, attention with fixed-width heads at two levels.
SMALL = dict(image_size=64, num_channels=32, num_res_blocks=1, channel_mult="1,1,2", attention_resolutions="32,16",
             num_heads=4, num_head_channels=16, num_heads_upsample=-1, use_scale_shift_norm=True, dropout=0.0,
             resblock_updown=True, learn_sigma=False, class_cond=False, use_checkpoint=False, use_fp16=False,
             use_new_attention_order=False)
NOISE = dict(t0=1e-4, T=1.0, interval=1000)  # train.py's defaults, as Runner makes noise_levels


def _empty_module(name: str, **attrs) -> None:
    try:
        __import__(name)
    except ImportError:
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules[name] = module


def import_authors_code(root: Path):
    """(Image256Net, ckpt_util, script_util) from their repository, without their training imports."""
    sys.path.insert(0, str(root))
    _empty_module("ipdb", set_trace=lambda *a, **k: None)
    _empty_module("easydict", EasyDict=dict)
    _empty_module("wandb")
    _empty_module("prefetch_generator", BackgroundGenerator=iter)
    _empty_module("torch.utils.tensorboard", SummaryWriter=object)
    package = types.ModuleType("i2sb")  # i2sb/__init__ imports the runner (torchvision, torchmetrics…)
    package.__path__ = [str(root / "i2sb")]
    sys.modules["i2sb"] = package
    from guided_diffusion import script_util
    from i2sb import ckpt_util
    from i2sb.network import Image256Net

    return Image256Net, ckpt_util, script_util


def published_kwargs(ckpt_util, script_util, cond: bool, learn_sigma: bool = False) -> dict:
    """The model kwargs their ``download_adm_image256_{un,}cond_ckpt`` pickle (without downloading)."""
    kwargs = script_util.args_to_dict(ckpt_util.create_argparser(), script_util.model_and_diffusion_defaults().keys())
    kwargs["learn_sigma"] = learn_sigma
    model_kwargs = ckpt_util.extract_model_kwargs(kwargs)
    if cond:
        model_kwargs.update(ckpt_util.extract_diffusion_kwargs(kwargs))
        model_kwargs["use_fp16"] = False
        model_kwargs["in_channels"] = 6
    return model_kwargs


class _Log:
    def info(self, *args, **kwargs):
        pass


def build_image256net(Image256Net, model_kwargs: dict, cond: bool):
    """Their network with their kwargs (read from the pickle they load), no pretrained ADM weights."""
    noise_levels = torch.linspace(NOISE["t0"], NOISE["T"], NOISE["interval"]) * NOISE["interval"]
    with tempfile.TemporaryDirectory() as tmp:
        from i2sb.ckpt_util import I2SB_IMG256_COND_PKL, I2SB_IMG256_UNCOND_PKL

        with open(Path(tmp) / (I2SB_IMG256_COND_PKL if cond else I2SB_IMG256_UNCOND_PKL), "wb") as f:
            pickle.dump(model_kwargs, f)
        return Image256Net(_Log(), noise_levels, use_fp16=False, cond=cond, pretrained_adm=False, ckpt_dir=tmp)


def layout(Image256Net, script_util, model_kwargs: dict, cond: bool, suffix: str) -> dict:
    from torch_ema import ExponentialMovingAverage

    with torch.device("meta"):
        net = build_image256net(Image256Net, model_kwargs, cond)
        ema = ExponentialMovingAverage(net.parameters(), decay=0.99).state_dict()
        adm = script_util.create_model(**model_kwargs)
    names = [n for n, _ in net.named_parameters()]
    shadow = ema["shadow_params"]
    return {f"net{suffix}": shapes_of(net.state_dict()),
            f"ema{suffix}": {f"shadow_params.{i}": tuple(t.shape) for i, t in enumerate(shadow)},
            f"ema_order{suffix}": {f"{i:04d} {n}": tuple(t.shape) for i, (n, t) in enumerate(zip(names, shadow, strict=True))},
            f"adm{suffix}": shapes_of(adm.state_dict())}



def forward_fixture(Image256Net, source: str) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """Their small network (plain and cond_x1) with seeded weights on a small input, and its output."""
    gen = torch.Generator().manual_seed(1)
    xt, x1 = torch.randn(2, 3, 32, 32, generator=gen), torch.randn(2, 3, 32, 32, generator=gen)
    steps = torch.tensor([5, 900])
    tensors = {"xt": xt, "x1": x1, "steps": steps}
    meta = {"source": source, "config": json.dumps(SMALL), "noise": json.dumps(NOISE)}
    for name, cond in (("plain", False), ("cond_x1", True)):
        kwargs = dict(SMALL, in_channels=6) if cond else dict(SMALL)
        net = build_image256net(Image256Net, kwargs, cond).eval()
        shapes = shapes_of(net.state_dict())
        net.load_state_dict(seeded_weights(shapes, seed=0), strict=True)
        with torch.no_grad():
            tensors[f"out_{name}"] = net(xt, steps, cond=x1).contiguous()
        meta[f"shapes_{name}"] = json.dumps({k: list(v) for k, v in sorted(shapes.items())})
        meta[f"parameters_{name}"] = json.dumps([n for n, _ in net.named_parameters()])  # the EMA's order
    return tensors, meta


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--authors-code", type=Path, required=True, help="NVlabs/I2SB, unpacked")
    parser.add_argument("--commit", default=None, help="the commit DIR was taken at (default: git rev-parse)")
    args = parser.parse_args(argv)
    root = args.authors_code.resolve()
    Image256Net, ckpt_util, script_util = import_authors_code(root)
    commit = args.commit or commit_of(root)
    components = {}
    uncond = published_kwargs(ckpt_util, script_util, cond=False)
    cond = published_kwargs(ckpt_util, script_util, cond=True)
    components |= layout(Image256Net, script_util, uncond, False, "")
    components |= layout(Image256Net, script_util, cond, True, "_cond_x1")
    with torch.device("meta"):
        openai = script_util.create_model(**published_kwargs(ckpt_util, script_util, cond=False, learn_sigma=True))
    components["adm_learn_sigma"] = shapes_of(openai.state_dict())
    source = (f"NVlabs/I2SB@{commit}: i2sb/network.py Image256Net (guided_diffusion/unet.py UNetModel via "
              f"script_util.create_model) with i2sb/ckpt_util.py's pickled kwargs {json.dumps(uncond, sort_keys=True)}"
              "; cond_x1: the same with in_channels=6; EMA: torch_ema.ExponentialMovingAverage(net.parameters()) "
              "as i2sb/runner.py; adm_learn_sigma: create_argparser() with learn_sigma=True (OpenAI's "
              "256x256_diffusion_uncond.pt)")
    notes = ("latest.pt = {'net': net, 'ema': {'decay', 'num_updates', 'shadow_params': ema, 'collected_params'}, "
             "'optimizer': AdamW state, 'sched'}; the loader reads 'net' and 'ema' only. adm* are bare UNetModel "
             "state dicts (256x256_diffusion_{un,}cond_fixedsigma.pt, which Image256Net loads).")
    path = write_fixture(PublishedFormat(MODEL_ID, source, components, notes))
    print(f"wrote {path.name}: {sum(len(v) for v in components.values())} entries in {len(components)} components")
    tensors, meta = forward_fixture(Image256Net, source.split(":")[0] + ": i2sb/network.py Image256Net")
    save_file(tensors, str(FORWARD_FIXTURE), metadata=meta)
    print(f"wrote {FORWARD_FIXTURE.name}: {FORWARD_FIXTURE.stat().st_size} bytes")


if __name__ == "__main__":
    main()
