"""Fixture of LooseControl's published LoRA (``shariqfarooq/loose-control-3dbox``), from the authors' code.

    python -m training.published_formats.loose_control --authors-code DIR --diffusers-src SRC
    # DIR: shariqfarooq123/LooseControl; SRC: diffusers 0.20.2's ``src/diffusers``
    # (pip download diffusers==0.20.2 --no-deps --no-binary :all:, then unpack)

How the LoRA is made and read, from their code: ``loosecontrol.py`` builds ``ControlNetX`` (diffusers'
``ControlNetModel`` + ``UNet2DConditionLoadersMixin``) from ``lllyasviel/control_v11f1p_sd15_depth`` and
calls ``controlnet.load_attn_procs("shariqfarooq/loose-control-3dbox")``. ``load_attn_procs`` reads
``pytorch_lora_weights.safetensors`` (diffusers' ``LORA_WEIGHT_NAME_SAFE``, tried first; the ``.bin`` only
as a fallback), the file ``save_attn_procs`` writes by default: the state dict of ``AttnProcsLayers`` over
one ``LoRAAttnProcessor`` per attention layer (diffusers' LoRA recipe: ``hidden_size`` from the block's
channels, ``cross_attention_dim`` for ``attn2`` only), i.e. keys
``<attention>.processor.to_{q,k,v,out}_lora.{down,up}.weight``. Those classes are taken here from
diffusers 0.20.2's own source (the last release where ``LoRAAttnProcessor`` computes attention itself;
their ``set_processor(..., _remove_lora=...)`` needs ≥ 0.21, whose loader turns the same keys into
``LoRACompatibleLinear`` layers that add the same ``up(down(x))``).

The rank is not in their public code. ``--rank 8`` (default) follows the one LoRA path left in the
authors' own demo code (``CNBoxyLoRA-lr1.00e-04-r8-step200-bs8``, commented out beside
``lora_dir = "shariqfarooq/loose-control-3dbox"``); the project's loader reads the rank from the file.

The ControlNet config is lllyasviel/control_v11f1p_sd15_depth's ``config.json``
(``assets/published-formats/configs/lllyasviel/control_v11f1p_sd15_depth/config.json``; the same network
as ``lllyasviel/ControlNet-v1-1-nightly`` ``models/control_v11f1p_sd15_depth.yaml``: model_channels 320,
channel_mult [1, 2, 4, 4], attention at three levels, context_dim 768).

Also writes ``loose-control-3dbox.forward.safetensors``: a small self- and cross-attention layer with random
weights and a random rank-4 LoRA run through THEIR ``LoRAAttnProcessor`` — the project's merge must give the
same outputs.
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

import torch

from training.published_formats import commit_of

CONTROLNET_REPO = "lllyasviel/control_v11f1p_sd15_depth"
LORA_REPO = "shariqfarooq/loose-control-3dbox"
LORA_FILE = "pytorch_lora_weights.safetensors"


def controlnet_config() -> dict:
    from backends.common.published_formats import ASSETS

    path = ASSETS / "configs" / CONTROLNET_REPO / "config.json"
    return {k: v for k, v in json.loads(path.read_text()).items() if not k.startswith("_")}



def check_their_loading(code: Path) -> None:
    """Their ``loosecontrol.py`` still loads this LoRA with ``load_attn_procs`` onto the depth ControlNet."""
    text = (code / "loosecontrol.py").read_text()
    for needle in (".load_attn_procs(loose_control_weights)", f'cn_checkpoint="{CONTROLNET_REPO}"',
                   f'loose_control_weights="{LORA_REPO}"'):
        if needle not in text:
            raise SystemExit(f"loosecontrol.py no longer has {needle!r}; re-read how the LoRA is loaded")


def _class_source(path: Path, name: str) -> str:
    text = path.read_text()
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return ast.get_source_segment(text, node)
    raise SystemExit(f"{name} not found in {path}")


def their_lora_classes(diffusers_src: Path) -> dict:
    """``LoRALinearLayer``, ``LoRAAttnProcessor`` and ``AttnProcsLayers`` exactly as diffusers 0.20.2 wrote
    them, compiled beside today's ``Attention`` (the methods they call exist unchanged)."""
    from typing import Optional

    import torch.nn.functional as F
    from diffusers.models.attention_processor import Attention
    from torch import nn

    # their annotations name typing.Dict / Optional; dict[...] evaluates the same
    ns = {"torch": torch, "nn": nn, "F": F, "Attention": Attention, "Dict": dict, "Optional": Optional}
    for rel, name in (("models/lora.py", "LoRALinearLayer"), ("models/attention_processor.py", "LoRAAttnProcessor"),
                      ("loaders.py", "AttnProcsLayers")):
        exec(compile(_class_source(diffusers_src / rel, name), f"diffusers-0.20.2/{rel}", "exec"), ns)
    return ns


def lora_processors(controlnet, config: dict, rank: int, LoRAAttnProcessor) -> dict:
    """One processor per attention layer, sized by diffusers' LoRA recipe (train_text_to_image_lora.py)."""
    procs = {}
    for name in controlnet.attn_processors:
        cross = None if name.endswith("attn1.processor") else config["cross_attention_dim"]
        if name.startswith("mid_block"):
            hidden = config["block_out_channels"][-1]
        elif name.startswith("down_blocks"):
            hidden = config["block_out_channels"][int(name[len("down_blocks.")])]
        else:
            raise SystemExit(f"unexpected attention layer {name} in a ControlNet")
        procs[name] = LoRAAttnProcessor(hidden_size=hidden, cross_attention_dim=cross, rank=rank)
    return procs


def full_size_format(ns: dict, rank: int) -> dict:
    from diffusers import ControlNetModel

    from backends.common.published_formats import shapes_of

    config = controlnet_config()
    with torch.device("meta"):
        controlnet = ControlNetModel(**config)
        layers = ns["AttnProcsLayers"](lora_processors(controlnet, config, rank, ns["LoRAAttnProcessor"]))
        return {"lora": shapes_of(layers.state_dict())}


@torch.no_grad()
def forward_fixture(ns: dict, seed: int = 0) -> dict[str, torch.Tensor]:
    """attn1 (self) and attn2 (cross) with random weights and a random rank-4 LoRA in THEIR processor."""
    from diffusers.models.attention_processor import Attention

    g = torch.Generator().manual_seed(seed)
    dim, ctx_dim, rank = 64, 32, 4
    model = torch.nn.ModuleDict({"attn1": Attention(dim, heads=2, dim_head=32),
                                 "attn2": Attention(dim, cross_attention_dim=ctx_dim, heads=2, dim_head=32)})
    model.load_state_dict({k: torch.randn(v.shape, generator=g) * 0.2 for k, v in model.state_dict().items()})
    procs = {"attn1.processor": ns["LoRAAttnProcessor"](dim, None, rank),
             "attn2.processor": ns["LoRAAttnProcessor"](dim, ctx_dim, rank)}
    lora = ns["AttnProcsLayers"](procs)
    lora.load_state_dict({k: torch.randn(v.shape, generator=g) * 0.3 for k, v in lora.state_dict().items()})
    for name, proc in procs.items():
        model[name.split(".")[0]].set_processor(proc)
    x = torch.randn(2, 16, dim, generator=g)
    ctx = torch.randn(2, 5, ctx_dim, generator=g)
    out = {f"model.{k}": v for k, v in model.state_dict().items() if "processor" not in k}
    out.update({f"lora.{k}": v for k, v in lora.state_dict().items()})
    out.update({"input.hidden": x, "input.context": ctx, "output.attn1": model["attn1"](x),
                "output.attn2": model["attn2"](x, encoder_hidden_states=ctx)})
    return out


def main(argv=None) -> None:
    from safetensors.torch import save_file

    from backends.common.published_formats import ASSETS, PublishedFormat, write_fixture

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--authors-code", type=Path, required=True, help="a checkout of shariqfarooq123/LooseControl")
    ap.add_argument("--diffusers-src", type=Path, required=True, help="diffusers 0.20.2's src/diffusers folder")
    ap.add_argument("--commit", default=None, help="their commit, when DIR is not a git checkout")
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--out", type=Path, default=ASSETS)
    args = ap.parse_args(argv)
    check_their_loading(args.authors_code)
    commit = args.commit or commit_of(args.authors_code)
    ns = their_lora_classes(args.diffusers_src)

    source = (f"shariqfarooq123/LooseControl@{commit}: loosecontrol.py ControlNetX.load_attn_procs({LORA_REPO}) "
              f"-> {LORA_FILE}; keys = diffusers 0.20.2 AttnProcsLayers over LoRAAttnProcessor(rank "
              f"{args.rank}) per attention layer of ControlNetModel with {CONTROLNET_REPO}'s config.json")
    notes = (f"rank {args.rank} is not in the public code (the authors' demo names a r8 checkpoint); shapes "
             f"are (rank, in) for down and (out, rank) for up; component 'lora' = the file {LORA_FILE}")
    fmt = full_size_format(ns, args.rank)
    path = write_fixture(PublishedFormat("loose-control-3dbox", source, fmt, notes), args.out)
    n = sum(torch.Size(s).numel() for s in fmt["lora"].values())
    print(f"wrote {path}: {len(fmt['lora'])} tensors, {n} parameters ({n * 4 / 2**20:.2f} MiB as fp32)")

    fwd = args.out / "loose-control-3dbox.forward.safetensors"
    save_file({k: v.contiguous() for k, v in forward_fixture(ns).items()}, str(fwd),
              metadata={"source": f"diffusers 0.20.2 LoRAAttnProcessor (loaded by shariqfarooq123/LooseControl@"
                                  f"{commit} through load_attn_procs)"})
    print(f"wrote {fwd} ({fwd.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
