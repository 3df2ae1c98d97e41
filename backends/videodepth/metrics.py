"""Video depth metrics as the Depth Any Video evaluation defines them (re-implemented).

Predictions are relative disparity with unknown scale and shift, so each is first fitted to the
ground truth by least squares **in disparity** — per frame or with one scale and shift for the
whole video — then inverted to depth and clipped to the valid depth range. Then:

- AbsRel = mean |d̂ − d| / d, δ1 = share of pixels with max(d̂/d, d/d̂) < 1.25;
- TAE (temporal alignment error): each frame's aligned depth is reprojected with the true camera
  poses into the next frame and compared with the depth predicted there (AbsRel, in both directions,
  averaged): a flickering or drifting prediction disagrees with itself even when every frame alone
  looks good.
"""

from __future__ import annotations

import numpy as np


def fit_scale_shift(pred: np.ndarray, target: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """(s, t) minimising Σ_mask (s·pred + t − target)²."""
    p, g = pred[mask].astype(np.float64), target[mask].astype(np.float64)
    if p.size < 2:
        return 1.0, 0.0
    a = np.stack([p, np.ones_like(p)], 1)
    (s, t), *_ = np.linalg.lstsq(a, g, rcond=None)
    return float(s), float(t)


def align_disparity(pred_disp: np.ndarray, depth: np.ndarray, per_frame: bool = False,
                    depth_range: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Fit predicted disparity (F×H×W) to 1/depth; returns (aligned depth, valid mask).

    Valid pixels have finite positive ground-truth depth inside ``depth_range`` (default: its own
    range). Aligned disparity is clipped to the range's disparity before inversion.
    """
    depth = np.asarray(depth, dtype=np.float64)
    pred = np.asarray(pred_disp, dtype=np.float64)
    if pred.shape != depth.shape:
        raise ValueError(f"prediction {pred.shape} and ground truth {depth.shape} differ in shape")
    valid = np.isfinite(depth) & (depth > 0)
    lo, hi = depth_range or (depth[valid].min(), depth[valid].max())
    valid &= (depth >= lo) & (depth <= hi)
    gt_disp = np.where(valid, 1.0 / np.where(valid, depth, 1.0), 0.0)
    aligned = np.empty_like(pred)
    groups = [(slice(i, i + 1),) for i in range(len(pred))] if per_frame else [(slice(None),)]
    for g in groups:
        s, t = fit_scale_shift(pred[g], gt_disp[g], valid[g])
        aligned[g] = s * pred[g] + t
    aligned = np.clip(aligned, 1.0 / hi, 1.0 / lo)
    return 1.0 / aligned, valid


def absrel(pred_depth: np.ndarray, depth: np.ndarray, valid: np.ndarray) -> float:
    return float(np.mean(np.abs(pred_depth[valid] - depth[valid]) / depth[valid]))


def delta1(pred_depth: np.ndarray, depth: np.ndarray, valid: np.ndarray) -> float:
    ratio = np.maximum(pred_depth[valid] / depth[valid], depth[valid] / pred_depth[valid])
    return float(np.mean(ratio < 1.25))


def reproject(depth: np.ndarray, intrinsics: np.ndarray, src_to_dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixels of a source frame with ``depth`` moved by the 4×4 camera transform ``src_to_dst``.

    Returns integer pixel coordinates (u, v) in the destination frame (pixel centres at +0.5, so
    pixel (i, j) covers [j, j+1)×[i, i+1)) and the point's z-depth there, for every source pixel
    (H×W each; u, v are −1 where the point falls outside or behind the camera).
    """
    h, w = depth.shape
    k = np.asarray(intrinsics, dtype=np.float64)
    u, v = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
    z = np.asarray(depth, dtype=np.float64)
    cam = np.stack([(u - k[0, 2]) / k[0, 0] * z, (v - k[1, 2]) / k[1, 1] * z, z], -1)
    moved = cam @ src_to_dst[:3, :3].T + src_to_dst[:3, 3]
    zd = moved[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        ud = moved[..., 0] / zd * k[0, 0] + k[0, 2]
        vd = moved[..., 1] / zd * k[1, 1] + k[1, 2]
    ok = np.isfinite(ud) & np.isfinite(vd) & (zd > 1e-6) & (ud >= 0) & (ud < w) & (vd >= 0) & (vd < h)
    ui = np.where(ok, np.floor(np.where(ok, ud, 0)), -1).astype(np.int64)
    vi = np.where(ok, np.floor(np.where(ok, vd, 0)), -1).astype(np.int64)
    return ui, vi, zd


def _tae_one_way(d_src, d_dst, valid_src, valid_dst, intrinsics, src_to_dst) -> tuple[float, int]:
    ui, vi, zd = reproject(np.where(valid_src, d_src, 1.0), intrinsics, src_to_dst)
    ok = valid_src & (ui >= 0)
    ok[ok] &= valid_dst[vi[ok], ui[ok]]
    if not ok.any():
        return 0.0, 0
    target = d_dst[vi[ok], ui[ok]]
    return float(np.sum(np.abs(zd[ok] - target) / target)), int(ok.sum())


def tae(pred_depth: np.ndarray, valid: np.ndarray, intrinsics: np.ndarray, extrinsics: np.ndarray) -> float:
    """Temporal alignment error of an aligned depth video (F×H×W) with world → camera ``extrinsics`` (F×4×4).

    ``valid`` should exclude moving objects (reprojection with camera poses holds only for static
    surfaces). Mean over frame pairs of the pixel-mean AbsRel of forward and backward reprojection.
    """
    errors = []
    for i in range(len(pred_depth) - 1):
        fwd = extrinsics[i + 1] @ np.linalg.inv(extrinsics[i])
        e1, n1 = _tae_one_way(pred_depth[i], pred_depth[i + 1], valid[i], valid[i + 1], intrinsics, fwd)
        e2, n2 = _tae_one_way(pred_depth[i + 1], pred_depth[i], valid[i + 1], valid[i], intrinsics, np.linalg.inv(fwd))
        if n1 and n2:
            errors.append(0.5 * (e1 / n1 + e2 / n2))
    return float(np.mean(errors)) if errors else float("nan")


def evaluate_clip(pred_disp: np.ndarray, depth: np.ndarray, static: np.ndarray, intrinsics: np.ndarray,
                  extrinsics: np.ndarray, per_frame: bool = False) -> dict[str, float]:
    """AbsRel, δ1 (all valid pixels) and TAE (static pixels) of one predicted disparity video."""
    aligned, valid = align_disparity(pred_disp, depth, per_frame=per_frame)
    return {"absrel": absrel(aligned, depth, valid), "delta1": delta1(aligned, depth, valid),
            "tae": tae(aligned, valid & static, intrinsics, extrinsics)}
