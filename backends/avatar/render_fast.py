"""The fast CPU splat renderer: 3DGS's tile rasterizer, compiled with numba (forward only, no gradients).

Same image as ``render.render_torch`` (the differentiable reference, used for training): the same EWA
projection (``render.project``), the same 3-sigma pixel boxes, the same 1/255 alpha floor, 0.999 alpha
cap and 1e-4 transmittance stop. What makes it fast is the organisation of 3DGS / gsplat:

1. bin: every Gaussian is listed in each 16×16 tile its 3-sigma box touches. Gaussians are visited in
   depth order, so each tile's list comes out sorted front to back without a per-tile sort;
2. composite: tiles run in parallel (``prange``); each pixel walks its tile's list front to back and
   stops as soon as its transmittance would fall under 1e-4 (early termination), so the Gaussians
   hidden behind an opaque body cost almost nothing.

It computes in float32. The first call compiles the kernels (cached on disk by numba, so once per
machine); ``warm_up`` does that ahead of the user's first render.
"""

from __future__ import annotations

import threading

import numba
import numpy as np
import torch
from numba import njit, prange

from .gom import Gaussians
from .render_common import ALPHA_MAX, ALPHA_MIN, EPS2D, T_MIN, Render

TILE = 16
# numba's own thread pool: its idle threads sleep, where OpenMP's spin (on a busy 2-core machine the spinning
# doubled the CPU time per frame). It is not safe for concurrent launches, so kernels run under a lock.
numba.config.THREADING_LAYER_PRIORITY = ["workqueue", "omp", "tbb"]
_kernels = threading.Lock()


@njit(cache=True, parallel=True)
def _project(means, covars, opacities, viewmat, K, width, height, near, eps2d, alpha_min, alpha_max):
    """``render.project`` per Gaussian, in float32: ``floats`` (mean x, y; conic a, b, c; opacity; depth;
    the conic's bound where alpha reaches ``alpha_min``),
    integer 3-sigma pixel boxes (x0, x1, y0, y1, clamped to the image) and whether it is drawn."""
    n = len(means)
    floats = np.zeros((n, 8), np.float32)
    box = np.zeros((n, 4), np.int32)
    drawn = np.zeros(n, np.bool_)
    r = viewmat
    fx, fy, cx, cy = K[0, 0], K[1, 1], K[0, 2], K[1, 2]
    tan_x, tan_y = 0.5 * width / fx, 0.5 * height / fy
    lim_x0, lim_x1 = -(cx / fx + 0.3 * tan_x), (width - cx) / fx + 0.3 * tan_x
    lim_y0, lim_y1 = -(cy / fy + 0.3 * tan_y), (height - cy) / fy + 0.3 * tan_y
    for i in prange(n):
        m = np.zeros(3, np.float32)
        for p in range(3):
            m[p] = r[p, 0] * means[i, 0] + r[p, 1] * means[i, 1] + r[p, 2] * means[i, 2] + viewmat[p, 3]
        z = m[2]
        if z <= near:
            continue
        tx = z * min(max(m[0] / z, lim_x0), lim_x1)
        ty = z * min(max(m[1] / z, lim_y0), lim_y1)
        # rows of J·R (2×3), then cov2d = (J R) Σ (J R)ᵀ
        j0 = np.zeros(3, np.float32)
        j1 = np.zeros(3, np.float32)
        for q in range(3):
            j0[q] = fx / z * r[0, q] - fx * tx / (z * z) * r[2, q]
            j1[q] = fy / z * r[1, q] - fy * ty / (z * z) * r[2, q]
        s0 = np.zeros(3, np.float32)
        s1 = np.zeros(3, np.float32)
        for q in range(3):
            for p in range(3):
                s0[q] += j0[p] * covars[i, p, q]
                s1[q] += j1[p] * covars[i, p, q]
        cov = np.zeros((2, 2), np.float32)
        for q in range(3):
            cov[0, 0] += s0[q] * j0[q]
            cov[0, 1] += s0[q] * j1[q]
            cov[1, 0] += s1[q] * j0[q]
            cov[1, 1] += s1[q] * j1[q]
        a = cov[0, 0] + eps2d
        b = 0.5 * (cov[0, 1] + cov[1, 0])
        c = cov[1, 1] + eps2d
        det = max(a * c - b * b, np.float32(1e-12))
        half = 0.5 * (a + c)
        lam = half + np.sqrt(max(half * half - det, np.float32(0.01)))
        radius = np.ceil(3.0 * np.sqrt(lam))
        u = fx * m[0] / z + cx
        v = fy * m[1] / z + cy
        if u + radius <= 0 or u - radius >= width or v + radius <= 0 or v - radius >= height or radius <= 0:
            continue
        drawn[i] = True
        floats[i, 0], floats[i, 1] = u, v
        floats[i, 2], floats[i, 3], floats[i, 4] = c / det, -b / det, a / det
        floats[i, 5], floats[i, 6] = opacities[i], z
        floats[i, 7] = 2.0 * np.log(max(min(opacities[i], alpha_max), np.float32(1e-12)) / alpha_min)
        box[i, 0] = min(max(np.floor(u - radius), 0), width - 1)
        box[i, 1] = min(max(np.floor(u + radius), 0), width - 1)
        box[i, 2] = min(max(np.floor(v - radius), 0), height - 1)
        box[i, 3] = min(max(np.floor(v + radius), 0), height - 1)
    return floats, box, drawn


@njit(cache=True)
def _bin(order, box, tile, tiles_x, tiles_y):
    """Per-tile lists of Gaussian ids (CSR: ``starts`` [tiles+1], ``ids``), each in ``order``."""
    counts = np.zeros(tiles_x * tiles_y + 1, np.int64)
    for g in order:
        for ty in range(box[g, 2] // tile, box[g, 3] // tile + 1):
            for tx in range(box[g, 0] // tile, box[g, 1] // tile + 1):
                counts[ty * tiles_x + tx + 1] += 1
    starts = np.cumsum(counts)
    cursor = starts[:-1].copy()
    ids = np.empty(starts[-1], np.int32)
    for g in order:
        for ty in range(box[g, 2] // tile, box[g, 3] // tile + 1):
            for tx in range(box[g, 0] // tile, box[g, 1] // tile + 1):
                t = ty * tiles_x + tx
                ids[cursor[t]] = g
                cursor[t] += 1
    return starts, ids


@njit(cache=True, parallel=True, fastmath=True)
def _composite(starts, ids, box, floats, colors, background, width, height, tile, tiles_x, alpha_min, alpha_max,
               t_min):
    """Front-to-back alpha compositing of each tile's list, Gaussian by Gaussian over its pixels.

    A Gaussian visits, row by row, only the pixels inside both its 3-sigma box and the ellipse where its
    alpha reaches ``alpha_min`` (outside it every pixel would be skipped anyway), widened by a pixel
    against rounding. Each pixel keeps its own transmittance and stops once it would fall under
    ``t_min``; a tile stops when all its pixels have. Every pixel still sees its Gaussians in depth
    order, so the result is 3DGS's per-pixel loop. ``floats`` per Gaussian as ``_project`` gives them.
    Returns rgb [H, W, C] over ``background`` [C], accumulated alpha [H, W] and expected depth [H, W]
    (0 where nothing is drawn).
    """
    channels = colors.shape[1]
    rgb = np.zeros((height, width, channels), np.float32)
    acc = np.zeros((height, width), np.float32)
    dep = np.zeros((height, width), np.float32)
    n_tiles = len(starts) - 1
    for t in prange(n_tiles):
        lo, hi = starts[t], starts[t + 1]
        if lo == hi:
            continue
        ty0, tx0 = (t // tiles_x) * tile, (t % tiles_x) * tile
        ty1, tx1 = min(height, ty0 + tile) - 1, min(width, tx0 + tile) - 1
        tw = tx1 - tx0 + 1
        n = (ty1 - ty0 + 1) * tw
        trans = np.ones(n, np.float32)
        t_rgb = np.zeros((n, channels), np.float32)
        t_dep = np.zeros(n, np.float32)
        live = np.ones(n, np.bool_)
        n_live = n
        for k in range(lo, hi):
            g = ids[k]
            mx, my = floats[g, 0], floats[g, 1]
            ca, cb, cc = floats[g, 2], floats[g, 3], floats[g, 4]
            opacity, z = floats[g, 5], floats[g, 6]
            cut = floats[g, 7]  # a dx² + 2b dx dy + c dy² ≤ cut where alpha can reach alpha_min
            if cut < 0:
                continue
            x0, x1 = max(box[g, 0], tx0), min(box[g, 1], tx1)
            y0, y1 = max(box[g, 2], ty0), min(box[g, 3], ty1)
            for py in range(y0, y1 + 1):
                dy = np.float32(py + 0.5) - my
                disc = cb * cb * dy * dy - ca * (cc * dy * dy - cut)
                if disc < 0:
                    continue
                root = np.sqrt(disc)
                lo_x = mx + (-cb * dy - root) / ca - 0.5
                hi_x = mx + (-cb * dy + root) / ca - 0.5
                rx0 = max(x0, int(np.floor(lo_x)) - 1)
                rx1 = min(x1, int(np.ceil(hi_x)) + 1)
                row = (py - ty0) * tw - tx0
                for px in range(rx0, rx1 + 1):
                    i = row + px
                    if not live[i]:
                        continue
                    dx = np.float32(px + 0.5) - mx
                    power = np.float32(-0.5) * (ca * dx * dx + cc * dy * dy) - cb * dx * dy
                    if power > 0:
                        continue
                    alpha = min(alpha_max, opacity * np.exp(power))
                    if alpha < alpha_min:
                        continue
                    t_here = trans[i]
                    next_t = t_here * (np.float32(1.0) - alpha)
                    if next_t < t_min:
                        live[i] = False
                        n_live -= 1
                        continue
                    w = alpha * t_here
                    for c in range(channels):
                        t_rgb[i, c] += w * colors[g, c]
                    t_dep[i] += w * z
                    trans[i] = next_t
            if n_live == 0:
                break
        for py in range(ty0, ty1 + 1):
            for px in range(tx0, tx1 + 1):
                i = (py - ty0) * tw + (px - tx0)
                for c in range(channels):
                    rgb[py, px, c] = t_rgb[i, c] + trans[i] * background[c]
                a = np.float32(1.0) - trans[i]
                acc[py, px] = a
                dep[py, px] = t_dep[i] / a if a > 0 else np.float32(0.0)
    for t in prange(n_tiles):  # tiles nothing touches: the background
        if starts[t] == starts[t + 1]:
            ty0, tx0 = (t // tiles_x) * tile, (t % tiles_x) * tile
            for py in range(ty0, min(height, ty0 + tile)):
                for px in range(tx0, min(width, tx0 + tile)):
                    for c in range(channels):
                        rgb[py, px, c] = background[c]
    return rgb, acc, dep


@torch.no_grad()
def render_fast(gaussians: Gaussians, viewmat: torch.Tensor, K: torch.Tensor, width: int, height: int,
                background: torch.Tensor | None = None, near: float = 0.01) -> Render:
    """Render ``gaussians`` from one camera on the CPU (float32 result tensors, same conventions as
    ``render.render_torch``). Thread-safe: concurrent calls take turns."""
    with _kernels:
        return _render_locked(gaussians, viewmat, K, width, height, background, near)


def _render_locked(gaussians, viewmat, K, width, height, background, near) -> Render:
    floats, box, drawn = _project(f32(gaussians.means), f32(gaussians.covars), f32(gaussians.opacities),
                                  f32(viewmat), f32(K), width, height, np.float32(near), np.float32(EPS2D),
                                  np.float32(ALPHA_MIN), np.float32(ALPHA_MAX))
    keep = np.flatnonzero(drawn)
    keep = keep[np.argsort(floats[keep, 6], kind="stable")]  # front to back
    floats, box = floats[keep], box[keep]  # gathered once, in depth order: the tiles read them in sequence
    colors = f32(gaussians.colors)[keep]
    tiles_x, tiles_y = -(-width // TILE), -(-height // TILE)
    starts, ids = _bin(np.arange(len(keep), dtype=np.int32), box, TILE, tiles_x, tiles_y)
    bg = np.zeros(colors.shape[1], np.float32) if background is None else f32(background)
    # everything up to the result happens in numba: a torch op here would wake torch's OpenMP pool, whose
    # threads spin for a while after each parallel op and compete with numba's for the cores
    rgb, acc, depth = _composite(starts, ids, box, floats, colors, bg, width, height, TILE, tiles_x,
                                 np.float32(ALPHA_MIN), np.float32(ALPHA_MAX), np.float32(T_MIN))
    return Render(torch.from_numpy(rgb), torch.from_numpy(acc), torch.from_numpy(depth))


def f32(t) -> np.ndarray:
    t = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t
    return np.ascontiguousarray(t, dtype=np.float32)


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels with a one-Gaussian render."""
    g = Gaussians(torch.tensor([[0.0, 0.0, 2.0]]), torch.eye(3)[None] * 0.01, torch.ones(1, 3), torch.ones(1))
    k = torch.tensor([[20.0, 0, 8], [0, 20.0, 8], [0, 0, 1]])
    render_fast(g, torch.eye(4), k, 16, 16)
