"""Scoring a video depth pipeline on held-out synthetic clips, side by side with baselines.

One function serves the model card (training/videodepth_model.py export) and the bench: per clip,
the model on the whole clip (joint, true frame indices), the same model frame by frame (the
per-frame baseline the paper compares against), and two trivial predictions that need no model —
a constant and a "lower in the image is nearer" ramp — so a number can be read against what
knowing nothing already scores. All are aligned per video (one scale and shift in disparity).
``long_video`` runs either long-video path as the tab does (the bench's and the interpolation card's).
"""

from __future__ import annotations

import numpy as np
import torch

from .metrics import evaluate_clip
from .requests import NUM_INTERP, VideoDepthRequest


def _ramp(shape) -> np.ndarray:
    f, h, w = shape
    return np.broadcast_to((np.arange(h) + 0.5)[None, :, None] / h, (f, h, w)).copy()


def evaluate_pipeline(pipe, clips: dict[str, np.ndarray], n_clips: int = 16, frames: int = 16, steps: int = 3,
                      seed: int = 0) -> dict[str, float]:
    """Mean AbsRel / δ1 / TAE over ``n_clips`` clips (first ``frames`` frames) for model and baselines."""
    rows: dict[str, list[dict]] = {"model": [], "perframe": [], "constant": [], "ramp": []}
    for c in range(min(n_clips, len(clips["rgb"]))):
        rgb = clips["rgb"][c, :frames]
        depth = clips["depth"][c, :frames].astype(np.float32)
        gt = (clips["static"][c, :frames], clips["intrinsics"][c], clips["extrinsics"][c, :frames])
        joint = pipe(rgb, position_ids=np.arange(len(rgb)), num_inference_steps=steps,
                     generator=torch.Generator().manual_seed(seed + c)).disparity
        single = np.concatenate([pipe(rgb[i:i + 1], position_ids=[i], num_inference_steps=steps,
                                      generator=torch.Generator().manual_seed(seed + c)).disparity
                                 for i in range(len(rgb))])
        for name, pred in (("model", joint), ("perframe", single), ("constant", np.full(depth.shape, 0.5)),
                           ("ramp", _ramp(depth.shape))):
            rows[name].append(evaluate_clip(pred, depth, *gt))
    return {f"{name}_{k}": round(float(np.nanmean([r[k] for r in rs])), 4)
            for name, rs in rows.items() for k in ("absrel", "delta1", "tae")}


def long_video(pipe, rgb: np.ndarray, method: str, steps: int, seed: int) -> np.ndarray:
    """Disparity of every frame of ``rgb`` through one of the tab's long-video paths at the request's defaults:
    ``"windows"`` (``WINDOW`` = 32 frames overlapping by 8, key-frame stride 24; a clip of at most 32 frames is
    one joint call) or ``"interpolation"`` (segments of 18 overlapping by 6: the reference's key-frame stride 12)."""
    from .interpolation import stream_depth_interpolated
    from .longvideo import stream_depth

    r = VideoDepthRequest  # its field defaults
    if method == "interpolation":
        out = stream_depth_interpolated(pipe, lambda: iter(rgb), len(rgb), NUM_INTERP, 6, r.max_keys, steps, seed=seed)
    else:
        out = stream_depth(pipe, lambda: iter(rgb), len(rgb), r.window, r.window - r.stride, r.max_keys, steps, seed=seed)
    return np.stack([d for _, d in out])
