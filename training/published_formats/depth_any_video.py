"""Fixture of Depth Any Video's published checkpoint (``hhyangcs/depth-any-video``), from the authors' code.

    python -m training.published_formats.depth_any_video --authors-code DIR   # DIR: Nightmare-n/DepthAnyVideo

Writes ``assets/published-formats/depth-any-video.json.gz`` (components ``unet``, ``unet_interp``, ``vae``:
the names and shapes of each ``diffusion_pytorch_model.safetensors``), built on the meta device with THEIR
``dav.models.UNetSpatioTemporalRopeConditionModel`` (``dav/models/unets/unet_spatio_temporal_rope_condition.py``)
and diffusers' ``AutoencoderKLTemporalDecoder`` (the class their ``run_infer.py`` loads ``vae/`` with).

The repo's ``unet/config.json`` files are not in their GitHub repository, so the configs are rebuilt:

* every UNet argument except ``in_channels`` is their class default, and those defaults are SVD's
  published UNet (``Stability-AI/generative-models`` ``configs/inference/svd.yaml``: model_channels 320,
  channel_mult [1, 2, 4, 4] → block_out_channels (320, 640, 1280, 1280); num_head_channels 64 →
  num_attention_heads (5, 10, 20, 20); num_res_blocks 2; transformer_depth 1; context_dim 1024). The
  1024-wide context is also what their ``dav/pipelines/dav_pipeline.py`` passes (``torch.zeros(B, 1, 1024)``);
* ``in_channels``: 8 for ``unet`` (``single_infer`` concatenates the noisy depth latent and the RGB latent,
  4 + 4 channels) and 16 for ``unet_interp`` (``single_interp_infer``: noisy latent, RGB latent, masked
  depth latent and mask, 4 channels each);
* the VAE is SVD's (``svd.yaml`` ``first_stage_config``: ch 128, ch_mult [1, 2, 4, 4] →
  block_out_channels (128, 256, 512, 512), num_res_blocks 2, z_channels 4, scale_factor 0.18215).

It also writes ``depth-any-video.forward.safetensors``: their UNet at a small config (two levels of 32
channels) with seeded random weights, a 3-frame input with sparse frame indices and a 3-token context, and
their outputs — the project's UNet must reproduce them from the same weights.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from training.published_formats import commit_of

UNET_CONFIG = dict(
    in_channels=8, out_channels=4,
    down_block_types=("CrossAttnDownBlockSpatioTemporal",) * 3 + ("DownBlockSpatioTemporal",),
    up_block_types=("UpBlockSpatioTemporal",) + ("CrossAttnUpBlockSpatioTemporal",) * 3,
    block_out_channels=(320, 640, 1280, 1280), layers_per_block=2, cross_attention_dim=1024,
    transformer_layers_per_block=1, num_attention_heads=(5, 10, 20, 20), num_frames=25,
)
UNET_INTERP_CONFIG = {**UNET_CONFIG, "in_channels": 16}
VAE_CONFIG = dict(
    in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 4,
    block_out_channels=(128, 256, 512, 512), layers_per_block=2, latent_channels=4, scaling_factor=0.18215,
)

SMALL_UNET_CONFIG = dict(
    sample_size=8, in_channels=8, out_channels=4,
    down_block_types=("CrossAttnDownBlockSpatioTemporal", "DownBlockSpatioTemporal"),
    up_block_types=("UpBlockSpatioTemporal", "CrossAttnUpBlockSpatioTemporal"),
    block_out_channels=(32, 32), layers_per_block=1, cross_attention_dim=16, num_attention_heads=(2, 2),
    num_frames=4,
)



def their_unet_class(code: Path):
    sys.path.insert(0, str(code))
    from dav.models import UNetSpatioTemporalRopeConditionModel

    return UNetSpatioTemporalRopeConditionModel


def full_size_format(unet_cls) -> dict:
    from diffusers import AutoencoderKLTemporalDecoder

    from backends.common.published_formats import shapes_of

    with torch.device("meta"):
        return {"unet": shapes_of(unet_cls(**UNET_CONFIG).state_dict()),
                "unet_interp": shapes_of(unet_cls(**UNET_INTERP_CONFIG).state_dict()),
                "vae": shapes_of(AutoencoderKLTemporalDecoder(**VAE_CONFIG).state_dict())}


@torch.no_grad()
def forward_fixture(unet_cls, seed: int = 0) -> dict[str, torch.Tensor]:
    """Their small UNet, random weights (every tensor, so no zero-initialised layer hides a path), inputs, outputs."""
    g = torch.Generator().manual_seed(seed)
    net = unet_cls(**SMALL_UNET_CONFIG).eval()
    # stored as fp16 (half the file); the forward runs in fp32 on exactly those values
    weights = {k: (torch.randn(v.shape, generator=g) * (0.2 if v.ndim > 1 else 0.5)).half()
               for k, v in net.state_dict().items()}
    net.load_state_dict({k: v.float() for k, v in weights.items()})
    sample = torch.randn(2, 3, SMALL_UNET_CONFIG["in_channels"], 8, 8, generator=g)
    context = torch.randn(2, 3, SMALL_UNET_CONFIG["cross_attention_dim"], generator=g)
    positions = torch.tensor([[0, 4, 9], [2, 3, 30]])
    timestep = torch.tensor(437.0)
    out = {f"weights.{k}": v for k, v in weights.items()}
    out.update({"input.sample": sample, "input.context": context, "input.position_ids": positions,
                "input.timestep": timestep,
                "output.sparse": net(sample, timestep, encoder_hidden_states=context, position_ids=positions).sample,
                "output.default": net(sample, timestep, encoder_hidden_states=context).sample})
    return out


def main(argv=None) -> None:
    from safetensors.torch import save_file

    from backends.common.published_formats import ASSETS, PublishedFormat, write_fixture

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--authors-code", type=Path, required=True, help="a checkout of Nightmare-n/DepthAnyVideo")
    ap.add_argument("--commit", default=None, help="their commit, when DIR is not a git checkout")
    ap.add_argument("--out", type=Path, default=ASSETS)
    args = ap.parse_args(argv)
    commit = args.commit or commit_of(args.authors_code)
    unet_cls = their_unet_class(args.authors_code)

    source = (f"Nightmare-n/DepthAnyVideo@{commit}: dav/models/unets/unet_spatio_temporal_rope_condition.py "
              f"UNetSpatioTemporalRopeConditionModel (unet: in_channels 8, unet_interp: in_channels 16, from "
              f"dav/pipelines/dav_pipeline.py; other arguments their defaults = SVD's UNet, "
              f"Stability-AI/generative-models configs/inference/svd.yaml); vae: diffusers "
              f"AutoencoderKLTemporalDecoder (their run_infer.py) with SVD's first_stage_config from svd.yaml")
    notes = ("configs rebuilt (the HF repo's config.json files are not in the GitHub repo): "
             + json.dumps({"unet": UNET_CONFIG, "unet_interp": UNET_INTERP_CONFIG, "vae": VAE_CONFIG}))
    path = write_fixture(PublishedFormat("depth-any-video", source, full_size_format(unet_cls), notes), args.out)
    print(f"wrote {path}")

    fwd = args.out / "depth-any-video.forward.safetensors"
    save_file({k: v.contiguous() for k, v in forward_fixture(unet_cls).items()}, str(fwd),
              metadata={"source": f"Nightmare-n/DepthAnyVideo@{commit}: UNetSpatioTemporalRopeConditionModel",
                        "config": json.dumps(SMALL_UNET_CONFIG)})
    print(f"wrote {fwd} ({fwd.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
