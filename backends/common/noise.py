"""The initial noise of a diffusion pipeline, drawn the same way by every sampler of the suite."""

from __future__ import annotations

import torch
from diffusers.utils.torch_utils import randn_tensor


def initial_latents(shape: tuple[int, ...], generator=None, latents: torch.Tensor | None = None,
                    device=None, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``latents`` checked against ``shape``, else fresh noise drawn in float32 (so a seed gives the same
    noise in every dtype), moved to ``device``/``dtype``; a list of generators seeds one row each."""
    if isinstance(generator, list) and len(generator) != shape[0]:
        raise ValueError(f"{len(generator)} generators for a batch of {shape[0]}")
    if latents is None:
        latents = randn_tensor(shape, generator=generator, device=device, dtype=torch.float32)
    elif tuple(latents.shape) != tuple(shape):
        raise ValueError(f"latents have shape {tuple(latents.shape)}, expected {tuple(shape)}")
    return latents.to(device, dtype)
