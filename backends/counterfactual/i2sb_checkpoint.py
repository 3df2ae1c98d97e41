"""Load the published I2SB/RCSB bridge (``latest.pt``) into our ADM U-Net, behind the same interface
as the embedded bridge: ``net(x_n, step, mask) → ε̂``.

Layouts read (as NVlabs/I2SB's code writes or reads them):

- ``latest.pt``: ``{"net": Image256Net.state_dict(), "ema": torch_ema state, "optimizer", "sched"}``;
  the network's keys are prefixed ``diffusion_model.``, the EMA's ``shadow_params`` follow
  ``net.parameters()`` order, and sampling uses the EMA weights;
- a bare ``Image256Net`` state dict (``diffusion_model.…`` at the top level);
- a bare ADM ``UNetModel`` state dict, as I2SB initialises from (``256x256_diffusion_uncond[_fixedsigma].pt``);
  a learned-sigma file's 6 output channels are cut to the 3 ε channels, as I2SB's ``ckpt_util`` does.

The ADM config (channels, levels, blocks, attention levels, up/down blocks) is read off the keys and
shapes; only ``image_size`` and the head width, which leave no trace in the weights, default to the
256² model's. With ``cond_x1`` the network also sees x1 (6 input channels). The network's time input is
``noise_levels[step]`` with ``noise_levels = linspace(t0, T, interval)·interval``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn

from backends.common.errors import InputError

from .adm import ADMUNet

PREFIX = "diffusion_model."
EPS_CHANNELS = 3  # I2SB keeps ADM's ε channels; a learned-sigma ADM has 3 more


class I2SBNetwork(nn.Module):
    mask_channel = False

    def __init__(self, adm: ADMUNet, interval: int = 1000, t0: float = 1e-4, t1: float = 1.0):
        super().__init__()
        self.diffusion_model = adm
        self.register_buffer("noise_levels", torch.linspace(t0, t1, interval) * interval, persistent=False)
        self.cond_x1 = adm.config["in_channels"] == 6
        self.x1: torch.Tensor | None = None  # set by the caller when cond_x1

    def forward(self, xt: torch.Tensor, step, mask: torch.Tensor | None = None) -> torch.Tensor:
        steps = torch.as_tensor(step, device=xt.device).reshape(-1).expand(xt.shape[0])
        if self.cond_x1:
            if self.x1 is None:
                raise InputError("this I2SB checkpoint is conditioned on x1; set network.x1 first")
            xt = torch.cat([xt, self.x1], 1)
        return self.diffusion_model(xt, self.noise_levels[steps])


def _kinds(state: Mapping[str, torch.Tensor], prefix: str) -> dict[int, dict[int, str]]:
    """block index → sub-module index → 'res' | 'attn' | 'conv' for ``prefix.<i>.<k>.…`` keys."""
    out: dict[int, dict[int, str]] = {}
    pattern = re.compile(re.escape(prefix) + r"\.(\d+)\.(\d+)\.(in_layers|qkv|conv|op)\.")
    for key in state:
        if m := pattern.match(key):
            kind = {"in_layers": "res", "qkv": "attn"}.get(m[3], "conv")
            out.setdefault(int(m[1]), {})[int(m[2])] = kind
    return out


def adm_config_from_state(state: Mapping[str, torch.Tensor], image_size: int = 256) -> dict:
    """ADMUNet's config read off an ADM state dict (no prefix). ``image_size`` only names the attention
    resolutions (ADM stores attention by downsampling factor, which is what the weights show)."""
    try:
        model_channels = state["time_embed.0.weight"].shape[1]
        first, last = state["input_blocks.0.0.weight"], state["out.2.weight"]
        outputs = _kinds(state, "output_blocks")
        inputs = _kinds(state, "input_blocks")
        # an output block that ends in a second ResBlock or a conv after its first one upsamples
        ups = sorted(i for i, subs in outputs.items() if max(subs) >= 1 and subs[max(subs)] in ("res", "conv"))
        per_level = ups[0] + 1 if ups else len(outputs)
        levels = len(outputs) // per_level
        num_res_blocks = per_level - 1
        mult, attn_ds = [], []
        for level in range(levels):
            i = 1 + level * per_level
            mult.append(state[f"input_blocks.{i}.0.out_layers.3.weight"].shape[0] / model_channels)
            if inputs[i].get(1) == "attn":
                attn_ds.append(2 ** level)
        res_updown = bool(ups) and outputs[ups[0]][max(outputs[ups[0]])] == "res"
        out1 = state["input_blocks.1.0.out_layers.3.weight"].shape[0]
        scale_shift = state["input_blocks.1.0.emb_layers.1.weight"].shape[0] == 2 * out1
    except (KeyError, IndexError, ZeroDivisionError) as e:
        raise InputError(f"not an ADM U-Net state dict (no {e}).") from None
    return dict(image_size=image_size, in_channels=first.shape[1], model_channels=model_channels,
                out_channels=last.shape[0], num_res_blocks=num_res_blocks,
                attention_resolutions=tuple(image_size // d for d in attn_ds),
                channel_mult=tuple(int(m) if m == int(m) else m for m in mult),
                scale_shift=scale_shift, resblock_updown=res_updown)


def split_checkpoint(ckpt: object) -> tuple[dict[str, torch.Tensor], list[torch.Tensor] | None]:
    """(ADM state dict without prefix, EMA shadow params or None) of any of the layouts above."""
    if not isinstance(ckpt, dict):
        raise InputError("has no I2SB network weights (not a dict of tensors).")
    state, shadow = ckpt, None
    if isinstance(ckpt.get("net"), dict):
        state = ckpt["net"]
        ema = ckpt.get("ema")
        shadow = ema.get("shadow_params") if isinstance(ema, dict) else None
    if any(k.startswith(PREFIX) for k in state):
        state = {k[len(PREFIX):]: v for k, v in state.items() if k.startswith(PREFIX)}
    elif "input_blocks.0.0.weight" not in state:
        raise InputError(f"has no I2SB network weights (expected keys '{PREFIX}…' under 'net', or an ADM U-Net's).")
    return dict(state), shadow


def network_from_checkpoint(ckpt: object, use_ema: bool = True, **adm_overrides) -> I2SBNetwork:
    """Build the network a loaded checkpoint describes. The ADM is made on the meta device and the
    checkpoint's tensors are assigned to it (strict), so a 552M-parameter file is not held twice."""
    state, shadow = split_checkpoint(ckpt)
    out = state.get("out.2.weight")
    if out is not None and out.shape[0] == 2 * EPS_CHANNELS and "out.2.bias" in state:  # learned sigma
        state["out.2.weight"], state["out.2.bias"] = out[:EPS_CHANNELS], state["out.2.bias"][:EPS_CHANNELS]
    config = adm_config_from_state(state, adm_overrides.pop("image_size", 256))
    config.update(adm_overrides)
    with torch.device("meta"):
        adm = ADMUNet(**config)
    names = [n for n, _ in adm.named_parameters()]
    if use_ema and shadow:
        if len(shadow) != len(names):
            raise InputError(f"the EMA has {len(shadow)} tensors for {len(names)} parameters.")
        state.update(zip(names, shadow, strict=True))  # torch_ema keeps net.parameters() order
    state = {k: v.float() if v.is_floating_point() else v for k, v in state.items()}
    try:
        adm.load_state_dict(state, strict=True, assign=True)
    except RuntimeError as e:
        detail = "; ".join(line.strip() for line in str(e).splitlines()[1:3])
        raise InputError(f"does not match the ADM architecture read off it: {detail}") from None
    return I2SBNetwork(adm).eval()


def load_i2sb_checkpoint(path: str | Path, use_ema: bool = True, **adm_overrides) -> I2SBNetwork:
    """Read ``latest.pt`` (weights only, no pickled code) and build the matching network."""
    path = Path(path)
    try:  # memory-mapped: of 'net' and 'ema' only the weights used are ever read (a legacy file cannot be)
        try:
            ckpt = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError:
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # a truncated or foreign file
        raise InputError(f"{path.name} is not a readable I2SB checkpoint ({e.__class__.__name__}).") from None
    try:
        return network_from_checkpoint(ckpt, use_ema, **adm_overrides)
    except InputError as e:
        raise InputError(f"{path.name} {e}") from None
