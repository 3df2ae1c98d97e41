"""Depth Any Video's key-frame interpolation, for pipelines that have an interpolation UNet.

The published checkpoint ships ``unet_interp``, and the embedded model has one too (trained by
``training/videodepth_interp.py``): it fills a segment of ``num_interp`` frames between two key frames,
given as extra input channels the key frames' disparity latents (zeros in between) and a mask (ones at
both ends): [noise, RGB latent, masked key latents, mask] (``Nightmare-n/DepthAnyVideo: dav/pipelines/
dav_pipeline.py``, ``single_interp_infer``). Key frames are denoised jointly with their true indices
first, so the whole video shares one disparity scale, which the segments take from their key frames;
consecutive segments overlap by ``overlap`` frames and are cross-faded in latent space.

Unlike the reference, frames are streamed, never all loaded, and length is not capped: more key frames
than one call may hold (``max_keys``) are denoised in groups fitted to each other (``key_latents``).
A stopped run resumes from a ``longvideo.StreamState`` holding the key-frame latents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np
import torch

from backends.common.errors import InputError
from backends.common.interrupt import stop_between_steps, stop_inside, stoppable_call
from backends.common.progress import CancelToken

from .longvideo import StreamState, read_key_frames, read_spans
from .metrics import fit_scale_shift
from .requests import NUM_INTERP  # frames filled between two key frames (the reference's)


def segments(n_frames: int, num_interp: int = NUM_INTERP, overlap: int = 6) -> list[tuple[int, int]]:
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
                        generator: torch.Generator | None = None, position_ids: np.ndarray | None = None,
                        initial_noise: str = "zero", cancel: CancelToken | None = None) -> torch.Tensor:
    """Disparity latents (1×L×C×h×w) of the L frames ``rgb``, whose end latents are ``first`` and ``last``.

    ``position_ids``: the frames' true indices (RoPE); ``initial_noise``: ``"zero"`` (the pipeline's default
    start, what the embedded networks were trained for) or ``"independent"`` noise from ``generator`` (the
    reference's). The UNet's output becomes a velocity as the pipeline's ``prediction_type`` says.
    ``cancel`` is checked inside the UNet call and after every step (→ its ``Cancelled``).
    """
    step_end = stop_between_steps(cancel)
    unet = pipe.unet_interp
    rgb_latents = pipe.encode(pipe.prepare_frames(rgb))
    c = unet.config.out_channels
    n = rgb_latents.shape[1]
    shape = (1, n, c, *rgb_latents.shape[-2:])
    if unet.config.in_channels != 4 * c:
        raise InputError(f"unet_interp takes {unet.config.in_channels} channels; expected 4 × {c}.")
    masked = torch.zeros(shape, dtype=rgb_latents.dtype, device=rgb_latents.device)
    masked[:, 0], masked[:, -1] = first, last
    mask = torch.zeros_like(masked)
    mask[:, [0, -1]] = 1.0
    if initial_noise == "zero":
        latents = torch.zeros_like(masked)
    else:
        latents = torch.randn(shape, generator=generator, dtype=masked.dtype).to(masked.device)
    pos = None if position_ids is None else torch.as_tensor(np.asarray(position_ids), device=masked.device).reshape(1, n)
    pipe.scheduler.set_timesteps(int(num_inference_steps), device=masked.device)
    for i, t in enumerate(pipe.scheduler.timesteps):
        with stop_inside(unet, cancel):
            out = unet(torch.cat([latents, rgb_latents, masked, mask], 2), t, position_ids=pos).sample
        latents = pipe.scheduler.step(pipe.velocity(out, latents, i), t, latents).prev_sample
        if step_end:
            step_end(pipe, i, t, {})
    return latents


def key_plan(n_frames: int, num_interp: int = NUM_INTERP, overlap: int = 6) -> list[int]:
    """Key frames: both ends of every segment."""
    segs = segments(n_frames, num_interp, overlap)
    return sorted({s for s, _ in segs} | {e - 1 for _, e in segs})


def _as_latents(pipe, disp: np.ndarray) -> torch.Tensor:
    """Disparity in [0, 1] (F×H×W) → disparity latents 1×F×C×h×w (the 3-channel image the target is)."""
    x = torch.from_numpy(np.asarray(disp, np.float32) * 2 - 1)[:, None].expand(-1, 3, -1, -1)
    return pipe.encode(x[None].to(pipe.device))


@torch.no_grad()
def key_latents(pipe, key_rgb: np.ndarray, keys: list[int], max_keys: int, num_inference_steps: int, seed: int,
                initial_noise: str = "zero", cancel: CancelToken | None = None) -> torch.Tensor:
    """Latents (K×C×h×w) of all key frames: denoised jointly with their true indices (RoPE).

    More than ``max_keys`` key frames are denoised in groups of ``max_keys`` that share a quarter of their
    keys with the previous group; each group's disparity is fitted (least-squares scale and shift) to the
    shared keys of the groups before it, so one scale runs through the whole video while no network call
    holds more than ``max_keys`` frames (the reference stops at 32 key frames instead). ``cancel`` is
    asked inside every UNet call (→ ``Cancelled``).
    """
    def infer(sel: list[int]):
        return stoppable_call(pipe, cancel, key_rgb[sel], position_ids=np.asarray(keys)[sel],
                              num_inference_steps=num_inference_steps, generator=torch.Generator().manual_seed(seed),
                              initial_noise=initial_noise)

    if len(keys) <= max_keys:
        return infer(list(range(len(keys)))).latents[0]
    if max_keys < 4:
        raise InputError(f"{len(keys)} key frames need groups of at least 4; max_keys is {max_keys}.")
    link = max(2, max_keys // 4)
    disp: dict[int, np.ndarray] = {}
    start = 0
    while True:
        sel = list(range(start, min(start + max_keys, len(keys))))
        pred = infer(sel).disparity.astype(np.float64)
        shared = [j for j, k in enumerate(sel) if k in disp]
        if shared:
            s, t = fit_scale_shift(pred[shared], np.stack([disp[sel[j]] for j in shared]), np.ones((len(shared),
                                   *pred.shape[1:]), bool))
            pred = np.clip(s * pred + t, 0.0, 1.0)
        for j, k in enumerate(sel):
            disp.setdefault(k, pred[j])
        if sel[-1] == len(keys) - 1:
            break
        start = sel[-1] + 1 - link
    return _as_latents(pipe, np.stack([disp[j] for j in range(len(keys))]))[0]


def stream_depth_interpolated(pipe, open_frames: Callable[[], Iterable[np.ndarray]], n_frames: int,
                              num_interp: int = NUM_INTERP, overlap: int = 6, max_keys: int = 32,
                              num_inference_steps: int = 3, seed: int = 0,
                              on_segment: Callable[[int, int], None] | None = None,
                              cancel: CancelToken | None = None, resume: StreamState | None = None,
                              on_state: Callable[[StreamState], None] | None = None,
                              initial_noise: str = "zero") -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(frame_index, disparity)`` for every frame: joint key frames, then interpolated segments.

    Same contract as ``longvideo.stream_depth``: ``open_frames()`` gives a fresh frame iterator (called
    twice), ``on_segment(done, total)`` reports progress, a cancelled ``cancel`` → its ``Cancelled``, ``on_state``
    receives a :class:`~backends.videodepth.longvideo.StreamState` after each segment (key-frame LATENTS, the
    overlap's latents), and ``resume`` continues from one with the same frames as an uninterrupted run.
    """
    if getattr(pipe, "unet_interp", None) is None:
        raise InputError("This model has no interpolation network; use windowed inference instead.")
    if n_frames < 1:
        raise InputError("The video has no frames.")
    segs = segments(n_frames, num_interp, overlap)
    keys = key_plan(n_frames, num_interp, overlap)
    total = len(segs) + 1
    if resume is None:
        key_rgb = read_key_frames(open_frames, keys, n_frames)
        key_lat = key_latents(pipe, key_rgb, keys, max_keys, num_inference_steps, seed, initial_noise, cancel)
        del key_rgb
        key_of = {k: key_lat[j] for j, k in enumerate(keys)}
        tail: torch.Tensor | None = None  # latents of the previous segment's frames shared with this one
        emitted, first = 0, 0
    else:
        if sorted(resume.key_disp) != keys or not 0 < resume.next_window <= len(segs):
            raise InputError("The saved state belongs to a different video or settings; start a new run.")
        key_of = {k: torch.as_tensor(v, device=pipe.device, dtype=pipe.unet_interp.dtype) for k, v in resume.key_disp.items()}
        tail = torch.stack([torch.as_tensor(resume.tail[i], device=pipe.device, dtype=pipe.unet_interp.dtype)
                            for i in sorted(resume.tail)]) if resume.tail else None
        emitted, first = resume.emitted, resume.next_window
    if on_segment:
        on_segment(1 + first, total)
    for g, start, stop, clip in read_spans(open_frames, segs, n_frames, first, cancel):
        lat = interpolate_segment(pipe, clip, key_of[start],
                                  key_of[stop - 1], num_inference_steps, torch.Generator().manual_seed(seed + 1 + g),
                                  np.arange(start, stop), initial_noise, cancel)[0]
        if tail is not None:
            k = len(tail)
            ratio = torch.linspace(0, 1, k + 2, dtype=lat.dtype)[1:-1].view(-1, 1, 1, 1)
            lat[:k] = tail * (1 - ratio) + lat[:k] * ratio
        last = g == len(segs) - 1
        keep = stop if last else segs[g + 1][0]
        disp = pipe.decode(lat[: keep - start][None]).cpu().numpy()
        for i in range(emitted, keep):
            yield i, disp[i - start]
        emitted = keep
        tail = lat[keep - start:]
        if on_state and not last:
            on_state(StreamState(g + 1, emitted, {k: v.float().cpu().numpy() for k, v in key_of.items()},
                                 {keep + j: t.float().cpu().numpy() for j, t in enumerate(tail)}))
        if on_segment:
            on_segment(g + 2, total)
