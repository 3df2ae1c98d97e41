"""Gaussian splatting renderer: pure torch everywhere (differentiable, tested on CPU), gsplat on CUDA,
and a compiled tile renderer for fast CPU display (``render_fast``, same image, no gradients).

The torch path follows 3DGS / gsplat's reference: project means and covariances with the pinhole
Jacobian (EWA), add the 0.3 px² low-pass dilation, evaluate each Gaussian on the pixels of its
3-sigma box, drop contributions under 1/255, and alpha-composite front to back in depth order,
stopping a pixel once its transmittance would fall under 1e-4. It is tile-free: every (Gaussian,
pixel) pair of a band of image rows is listed at once, sorted by (pixel, depth), and composited with
a segmented cumulative sum of log-transmittance — vectorised, with bounded memory per band.

Cameras are OpenCV-style: ``viewmat`` is world → camera (x right, y down, z forward), ``K`` the 3×3
intrinsics with pixel centres at +0.5 (``backends.synth.Camera`` gives both).
"""

from __future__ import annotations

import math

import torch

from .gom import Gaussians
from .render_common import ALPHA_MAX, ALPHA_MIN, EPS2D, T_MIN, Render

MAX_PAIRS = 4_000_000  # (Gaussian, pixel) pairs composited at once


def gsplat_available(device: torch.device | str) -> bool:
    """True when gsplat is installed and ``device`` is a CUDA device (gsplat cannot run on CPU)."""
    if torch.device(device).type != "cuda" or not torch.cuda.is_available():
        return False
    try:
        import gsplat  # noqa: F401
    except ImportError:
        return False
    return True


def render(gaussians: Gaussians, viewmat: torch.Tensor, K: torch.Tensor, width: int, height: int,
           background: torch.Tensor | None = None, near: float = 0.01, backend: str = "auto") -> Render:
    """Render ``gaussians`` from one camera. ``backend``: "auto" (gsplat on CUDA when installed, else
    torch), "torch" (differentiable), "fast" (the compiled CPU tile renderer, no gradients) or "gsplat"."""
    device = gaussians.means.device
    if backend not in ("auto", "torch", "fast", "gsplat"):
        raise ValueError(f"unknown renderer backend {backend!r}")
    if backend == "fast":
        from .render_fast import render_fast

        return render_fast(gaussians, viewmat, K, width, height, background, near)
    if backend == "gsplat" or (backend == "auto" and gsplat_available(device)):
        return render_gsplat(gaussians, viewmat, K, width, height, background, near)
    return render_torch(gaussians, viewmat, K, width, height, background, near)


def project(means: torch.Tensor, covars: torch.Tensor, viewmat: torch.Tensor, K: torch.Tensor,
            width: int, height: int, near: float = 0.01):
    """EWA projection: pixel means [N,2], dilated 2D covariances [N,2,2], depths [N], conics [N,3]
    (inverse covariance a, b, c), 3-sigma radii [N] (0 = culled)."""
    r, t = viewmat[:3, :3].to(means.dtype), viewmat[:3, 3].to(means.dtype)
    mc = means @ r.T + t
    cc = r @ covars @ r.T
    x, y, z = mc.unbind(-1)
    fx, fy, cx, cy = K[0, 0], K[1, 1], K[0, 2], K[1, 2]
    zs = z.clamp(min=near)
    # evaluate the Jacobian no further than 30% outside the view frustum, as 3DGS / gsplat do
    tan_x, tan_y = 0.5 * width / fx, 0.5 * height / fy
    tx = zs * torch.clamp(x / zs, min=float(-(cx / fx + 0.3 * tan_x)), max=float((width - cx) / fx + 0.3 * tan_x))
    ty = zs * torch.clamp(y / zs, min=float(-(cy / fy + 0.3 * tan_y)), max=float((height - cy) / fy + 0.3 * tan_y))
    zero = torch.zeros_like(zs)
    jac = torch.stack([fx / zs, zero, -fx * tx / zs ** 2, zero, fy / zs, -fy * ty / zs ** 2], -1).reshape(-1, 2, 3)
    cov2d = jac @ cc @ jac.transpose(-1, -2)
    cov2d = cov2d + EPS2D * torch.eye(2, dtype=cov2d.dtype, device=cov2d.device)
    mean2d = torch.stack([fx * x / zs + cx, fy * y / zs + cy], -1)
    a, b, c = cov2d[:, 0, 0], 0.5 * (cov2d[:, 0, 1] + cov2d[:, 1, 0]), cov2d[:, 1, 1]
    det = (a * c - b * b).clamp(min=1e-12)
    conic = torch.stack([c / det, -b / det, a / det], -1)
    half = 0.5 * (a + c)
    lam = half + torch.sqrt((half * half - det).clamp(min=0.01))
    radius = torch.ceil(3.0 * torch.sqrt(lam))
    visible = (z > near) & (mean2d[:, 0] + radius > 0) & (mean2d[:, 0] - radius < width) \
        & (mean2d[:, 1] + radius > 0) & (mean2d[:, 1] - radius < height)
    return mean2d, cov2d, z, conic, torch.where(visible, radius, torch.zeros_like(radius))


def render_torch(gaussians: Gaussians, viewmat: torch.Tensor, K: torch.Tensor, width: int, height: int,
                 background: torch.Tensor | None = None, near: float = 0.01) -> Render:
    """The pure-torch rasterizer (CPU or GPU; differentiable in every Gaussian parameter)."""
    means, colors, opac = gaussians.means, gaussians.colors, gaussians.opacities
    dtype, device = means.dtype, means.device
    viewmat, K = viewmat.to(device, dtype), K.to(device, dtype)
    mean2d, _, depth, conic, radius = project(means, gaussians.covars, viewmat, K, width, height, near)
    keep = torch.nonzero(radius > 0)[:, 0]
    keep = keep[torch.argsort(depth[keep].detach(), stable=True)]  # front to back
    channels = colors.shape[-1]
    n_pix = width * height
    rgb = torch.zeros(n_pix, channels, dtype=dtype, device=device)
    acc = torch.zeros(n_pix, dtype=dtype, device=device)
    dep = torch.zeros(n_pix, dtype=dtype, device=device)
    if len(keep):
        m2, r = mean2d[keep], radius[keep].detach()
        x0 = (m2[:, 0].detach() - r).floor().clamp(0, width - 1).long()
        x1 = (m2[:, 0].detach() + r).floor().clamp(0, width - 1).long()
        y0 = (m2[:, 1].detach() - r).floor().clamp(0, height - 1).long()
        y1 = (m2[:, 1].detach() + r).floor().clamp(0, height - 1).long()
        cols = x1 - x0 + 1
        # per-Gaussian tables, gathered once per pair with index_select (much faster than many gathers)
        floats = torch.cat([m2, conic[keep], opac[keep, None], depth[keep, None], colors[keep]], 1)
        total = int(((y1 - y0 + 1) * cols).sum())
        bands = max(1, math.ceil(total / MAX_PAIRS))
        rows_per_band = math.ceil(height / bands)
        for top in range(0, height, rows_per_band):
            bottom = min(height, top + rows_per_band) - 1
            by0, by1 = y0.clamp(min=top), y1.clamp(max=bottom)
            inside = torch.nonzero(by1 >= by0)[:, 0]
            if len(inside) == 0:
                continue
            _composite(inside, x0, by0, by1, cols, floats, width, rgb, acc, dep)
    rgb = rgb.reshape(height, width, channels)
    acc = acc.reshape(height, width)
    depth_img = torch.where(acc > 0, dep.reshape(height, width) / acc.clamp(min=1e-12), torch.zeros_like(acc))
    if background is not None:
        rgb = rgb + (1 - acc)[..., None] * background.to(device, dtype)
    return Render(rgb, acc, depth_img)


def _composite(ids, x0, y0, y1, cols, floats, width, rgb, acc, dep):
    """Accumulate the Gaussians ``ids`` (sorted front to back) over the rows y0..y1 of their boxes.

    ``floats`` holds per Gaussian: mean x, y; conic a, b, c; opacity; depth; colour channels.
    """
    counts = (y1[ids] - y0[ids] + 1) * cols[ids]
    g = torch.repeat_interleave(ids, counts)  # Gaussian of each pair, in depth order
    start = torch.cumsum(counts, 0) - counts
    local = torch.arange(len(g), device=g.device) - torch.repeat_interleave(start, counts)
    ints = torch.stack([x0, y0, cols], 1).index_select(0, g)
    c = ints[:, 2]
    px = ints[:, 0] + local % c
    py = ints[:, 1] + local // c
    f = floats.index_select(0, g)
    dx = px.to(f.dtype) + 0.5 - f[:, 0]
    dy = py.to(f.dtype) + 0.5 - f[:, 1]
    power = -0.5 * (f[:, 2] * dx * dx + f[:, 4] * dy * dy) - f[:, 3] * dx * dy
    alpha = (f[:, 5] * torch.exp(power)).clamp(max=ALPHA_MAX)
    live = torch.nonzero((power <= 0) & (alpha >= ALPHA_MIN))[:, 0]
    if len(live) == 0:
        return
    pix = (py * width + px).index_select(0, live)
    order = torch.argsort(pix, stable=True)  # by pixel, keeping the depth order inside each pixel
    pick = live.index_select(0, order)
    pix = pix.index_select(0, order)
    alpha = alpha.index_select(0, pick)
    f = f.index_select(0, pick)
    log_t = torch.log1p(-alpha).double()
    csum = torch.cumsum(log_t, 0)
    seg_start = torch.ones_like(pix, dtype=torch.bool)
    seg_start[1:] = pix[1:] != pix[:-1]
    first = torch.cummax(torch.where(seg_start, torch.arange(len(pix), device=pix.device), 0), 0).values
    before = csum.index_select(0, first) - log_t.index_select(0, first)  # log T before each pixel's first pair
    excl = (csum - log_t - before).to(alpha.dtype)  # log T in front of each pair, within its pixel
    trans = torch.exp(excl)  # bands share no pixel, so this is the pixel's whole transmittance
    ok = trans * (1 - alpha) >= T_MIN  # the pair that would drop T under 1e-4, and all after it, are skipped
    weight = torch.where(ok, alpha * trans, torch.zeros_like(alpha))
    rgb.index_add_(0, pix, weight[:, None] * f[:, 7:])
    acc.index_add_(0, pix, weight)
    dep.index_add_(0, pix, weight * f[:, 6])


def render_gsplat(gaussians: Gaussians, viewmat: torch.Tensor, K: torch.Tensor, width: int, height: int,
                  background: torch.Tensor | None = None, near: float = 0.01) -> Render:
    """gsplat's CUDA rasterizer with the same conventions (precomputed covariances, expected depth)."""
    from gsplat import rasterization

    g = gaussians
    device = g.means.device
    colors, alphas, _ = rasterization(
        g.means.float(), None, None, g.opacities.float(), g.colors.float(), viewmat.float().to(device)[None], K.float().to(device)[None],
        width, height, near_plane=near, eps2d=EPS2D, render_mode="RGB+ED", covars=g.covars.float(),
        backgrounds=None,
    )
    rgb, depth, alpha = colors[0, ..., :-1], colors[0, ..., -1], alphas[0, ..., 0]
    if background is not None:
        rgb = rgb + (1 - alpha)[..., None] * background.float().to(device)
    return Render(rgb, alpha, torch.where(alpha > 0, depth, torch.zeros_like(depth)))
