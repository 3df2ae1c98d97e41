"""Depth Any Video's key-frame interpolation, for pipelines that have an interpolation UNet.

The published checkpoint ships ``unet_interp``: it fills a segment of ``num_interp`` frames between
two key frames, given as extra input channels the key frames' disparity latents (zeros in between)
and a mask (ones at both ends): [noise, RGB latent, masked key latents, mask] (``Nightmare-n/
DepthAnyVideo: dav/pipelines/dav_pipeline.py``, ``single_interp_infer``). Key frames are denoised
jointly with their true indices first; consecutive segments overlap by ``overlap`` frames and are
cross-faded in latent space. As in the reference, the number of key frames is capped (``max_keys``),
which caps the length; unlike it, frames are streamed, never all loaded.

The embedded model has no interpolation network (yet); ``longvideo.stream_depth`` serves it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np
import torch

from backends.common.errors import InputError


def segments(n_frames: int, num_interp: int = 16, overlap: int = 6) -> list[tuple[int, int]]:
    """[start, stop) of each segment (``num_interp`` + 2 frames, key frames at both ends)."""
    length = num_interp + 2
    if not 0 < overlap < length:
        raise InputError(f"Overlap {overlap} must be between 1 and {length - 1}.")
    if n_frames <= length:
        return [(0, n_frames)]
    starts = sorted(set(range(0, n_frames - length, length - overlap)) | {n_frames - length})
    return [(s, s + length) for s in starts]


@torch.no_grad()
def interpolate_segment(pipe, rgb: np.ndarray, first: torch.Tensor, last: torch.Tensor, num_inference_steps: int,
                        generator: torch.Generator | None = None) -> torch.Tensor:
    """Disparity latents (1×L×C×h×w) of the L frames ``rgb``, whose end latents are ``first`` and ``last``."""
    unet = pipe.unet_interp
    rgb_latents = pipe.encode(pipe.prepare_frames(rgb))
    c = unet.config.out_channels
    shape = (1, rgb_latents.shape[1], c, *rgb_latents.shape[-2:])
    if unet.config.in_channels != 4 * c:
        raise InputError(f"unet_interp takes {unet.config.in_channels} channels; expected 4 × {c}.")
    masked = torch.zeros(shape, dtype=rgb_latents.dtype, device=rgb_latents.device)
    masked[:, 0], masked[:, -1] = first, last
    mask = torch.zeros_like(masked)
    mask[:, [0, -1]] = 1.0
    latents = torch.randn(shape, generator=generator, dtype=masked.dtype).to(masked.device)
    pipe.scheduler.set_timesteps(int(num_inference_steps), device=masked.device)
    for t in pipe.scheduler.timesteps:
        v = unet(torch.cat([latents, rgb_latents, masked, mask], 2), t).sample
        latents = pipe.scheduler.step(v, t, latents).prev_sample
    return latents


def stream_depth_interpolated(pipe, open_frames: Callable[[], Iterable[np.ndarray]], n_frames: int,
                              num_interp: int = 16, overlap: int = 6, max_keys: int = 32,
                              num_inference_steps: int = 3, seed: int = 0,
                              on_segment: Callable[[int, int], None] | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(frame_index, disparity)`` for every frame: joint key frames, then interpolated segments."""
    if getattr(pipe, "unet_interp", None) is None:
        raise InputError("This model has no interpolation network; use windowed inference instead.")
    segs = segments(n_frames, num_interp, overlap)
    keys = sorted({s for s, _ in segs} | {e - 1 for _, e in segs})
    if len(keys) > max_keys:
        longest = (num_interp + 2 - overlap) * (max_keys // 2)
        raise InputError(f"{n_frames} frames need {len(keys)} key frames; at most {max_keys} (about {longest} frames).")
    wanted = set(keys)
    key_rgb = np.stack([f for i, f in zip(range(n_frames), open_frames(), strict=False) if i in wanted])
    key_lat = pipe(key_rgb, position_ids=np.asarray(keys), num_inference_steps=num_inference_steps,
                   generator=torch.Generator().manual_seed(seed)).latents[0]
    key_of = {k: key_lat[j] for j, k in enumerate(keys)}
    source = iter(open_frames())
    buffer: dict[int, np.ndarray] = {}
    tail: torch.Tensor | None = None  # latents of the previous segment's frames shared with this one
    emitted = 0
    for g, (start, stop) in enumerate(segs):
        for i in range(max(buffer, default=start - 1) + 1, stop):
            buffer[i] = next(source)
        for i in [i for i in buffer if i < start]:
            del buffer[i]
        lat = interpolate_segment(pipe, np.stack([buffer[i] for i in range(start, stop)]), key_of[start],
                                  key_of[stop - 1], num_inference_steps, torch.Generator().manual_seed(seed + 1 + g))
        lat = lat[0]
        if tail is not None:
            k = len(tail)
            ratio = torch.linspace(0, 1, k + 2, dtype=lat.dtype)[1:-1].view(-1, 1, 1, 1)
            lat[:k] = tail * (1 - ratio) + lat[:k] * ratio
        keep = stop if g == len(segs) - 1 else segs[g + 1][0]
        disp = pipe.decode(lat[: keep - start][None]).cpu().numpy()
        for i in range(emitted, keep):
            yield i, disp[i - start]
        emitted = keep
        tail = lat[keep - start:]
        if on_segment:
            on_segment(g + 1, len(segs))
