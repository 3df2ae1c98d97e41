"""Optimal-transport problems: DOTmark-style densities on a grid, point clouds, the paper's two costs.

Everything here is reproducible from its arguments: a density is fixed by ``(class, m, seed)``, a point cloud
by ``(kind, n, seed)``. The classes follow DOTmark (Schrieber, Schuhmacher, Gottschlich 2017) in spirit —
white noise, Gaussian random fields (rough / moderate / smooth, and their exponentials), Cauchy densities and
simple shapes — generated here from a seeded numpy ``Generator``, not read from the DOTmark files (which are
not shipped), so the exact pixel values differ from DOTmark's.

Costs are those of the MDOT-TNT paper: squared Euclidean and L1 between grid points (coordinates in [0, 1]),
divided by their maximum so that C ∈ [0, 1] — the scale the paper's γ schedule and tolerances assume.

A dense n × n cost in float64 takes 8 n² bytes (float32: 4); :func:`check_dense_fits` and :func:`check_solver_fits` refuse a problem whose dense
arrays do not fit a memory limit, naming the largest n that does.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np
import torch

from backends.common.errors import InputError

from .requests import CLOUD_KINDS, COSTS, DENSITY_CLASSES  # noqa: F401 (re-exported; one list for the tab and here)

POINT_CLOUD_KINDS = (*CLOUD_KINDS, "mixture")  # "mixture": the blobs' older name

# Spectral decay exponents of the Gaussian random fields: power ∝ (1 + |k|²)^(−α). Larger α, smoother field.
_GRF_ALPHA = {"grf_rough": 1.0, "grf_moderate": 2.0, "grf_smooth": 3.0, "log_grf": 2.0}


class ProblemTooLarge(InputError):
    """A dense OT problem whose arrays do not fit the memory limit; carries the largest n that fits (and, for the
    solver, the largest n with the cost stored in float32: ``largest_n_float32``)."""

    def __init__(self, n: int, m: int, need_bytes: int, limit_bytes: int, largest_n: int, dtype: torch.dtype,
                 largest_n_float32: int | None = None):
        self.n, self.m, self.need_bytes, self.limit_bytes, self.largest_n = n, m, need_bytes, limit_bytes, largest_n
        self.largest_n_float32 = largest_n_float32
        side = int(math.isqrt(largest_n))
        other = ""
        if largest_n_float32 is not None:
            s32 = int(math.isqrt(largest_n_float32))
            other = (f" with the cost in float64, n = {largest_n_float32} ({s32}×{s32}) with the cost stored in "
                     "float32")
        super().__init__(
            f"An OT problem of {n} × {m} points needs {need_bytes / 2**30:.2f} GiB for its dense {dtype} arrays, "
            f"more than the {limit_bytes / 2**30:.2f} GiB allowed here (half the free memory). The largest square "
            f"problem that fits is n = {largest_n} points (a {side}×{side} grid){other}; use smaller images or fewer "
            "points."
        )


def _rng(*key) -> np.random.Generator:
    """A generator fixed by a key of strings and integers (stable across runs and platforms)."""
    parts = [zlib.crc32(str(k).encode()) if not isinstance(k, int) else int(k) & 0xFFFFFFFF for k in key]
    return np.random.default_rng(parts)


def _grf(m: int, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """A zero-mean, unit-variance Gaussian random field on an m×m torus by spectral filtering of white noise."""
    k = np.fft.fftfreq(m) * m
    k2 = k[:, None] ** 2 + k[None, :] ** 2
    amplitude = (1.0 + k2) ** (-alpha / 2.0)
    noise = rng.standard_normal((m, m))
    field_ = np.real(np.fft.ifft2(np.fft.fft2(noise) * amplitude))
    field_ -= field_.mean()
    std = field_.std()
    return field_ / std if std > 0 else field_


def density(cls: str, m: int, seed: int = 0) -> np.ndarray:
    """A DOTmark-style probability density on an m×m grid (float64, non-negative, sums to 1).

    ``cls`` is one of :data:`DENSITY_CLASSES`. Gaussian random fields are shifted to be non-negative
    (their minimum becomes 0, as DOTmark's GRF images are); ``log_grf`` is exp of a moderate field; ``cauchy``
    is a mixture of a few bivariate Cauchy bumps; ``shapes`` is a few filled discs and rectangles on an empty
    background (so it has zero-mass pixels, which the solver handles).
    """
    if cls not in DENSITY_CLASSES:
        raise InputError(f"Unknown density class {cls!r}; choose one of {', '.join(DENSITY_CLASSES)}.")
    if not isinstance(m, int) or m < 2:
        raise InputError(f"The grid side m must be an integer ≥ 2 (got {m!r}).")
    rng = _rng("density", cls, m, int(seed))
    if cls == "white_noise":
        img = rng.random((m, m))
    elif cls in ("grf_rough", "grf_moderate", "grf_smooth"):
        f = _grf(m, _GRF_ALPHA[cls], rng)
        img = f - f.min()
    elif cls == "log_grf":
        img = np.exp(_grf(m, _GRF_ALPHA[cls], rng))
    elif cls == "cauchy":
        yy, xx = np.meshgrid(np.linspace(0, 1, m), np.linspace(0, 1, m), indexing="ij")
        img = np.zeros((m, m))
        for _ in range(int(rng.integers(2, 6))):
            cy, cx = rng.random(2)
            scale = 0.02 + 0.1 * rng.random()
            weight = 0.5 + rng.random()
            img += weight * scale / (2 * np.pi * (scale**2 + (yy - cy) ** 2 + (xx - cx) ** 2) ** 1.5)
    else:  # shapes
        yy, xx = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
        img = np.zeros((m, m))
        for _ in range(int(rng.integers(2, 5))):
            cy, cx = rng.random(2) * m
            size = m * (0.08 + 0.2 * rng.random())
            if rng.random() < 0.5:
                mask = (yy - cy) ** 2 + (xx - cx) ** 2 <= size**2
            else:
                mask = (np.abs(yy - cy) <= size) & (np.abs(xx - cx) <= 0.6 * size)
            img[mask] = 1.0
        if img.sum() == 0:  # a tiny grid may miss every shape's pixel centre
            img[m // 2, m // 2] = 1.0
    img = np.asarray(img, dtype=np.float64)
    return img / img.sum()


def grid_coordinates(m: int, k: int | None = None) -> np.ndarray:
    """The (m·k, 2) coordinates (row, column) of an m×k grid's pixel centres, scaled to [0, 1]."""
    k = m if k is None else k
    ys = np.linspace(0.0, 1.0, m) if m > 1 else np.zeros(1)
    xs = np.linspace(0.0, 1.0, k) if k > 1 else np.zeros(1)
    yy, xx = np.meshgrid(ys, xs, indexing="ij")
    return np.stack([yy.ravel(), xx.ravel()], axis=1)


def point_cloud(kind: str, n: int, seed: int = 0, dim: int = 2) -> np.ndarray:
    """n points in ``dim`` dimensions (float64), reproducible from ``(kind, n, seed, dim)``."""
    if kind not in POINT_CLOUD_KINDS:
        raise InputError(f"Unknown point-cloud kind {kind!r}; choose one of {', '.join(POINT_CLOUD_KINDS)}.")
    if n < 1:
        raise InputError(f"A point cloud needs at least one point (got n = {n}).")
    rng = _rng("cloud", kind, n, int(seed), dim)
    if kind == "gaussian":
        return rng.standard_normal((n, dim)) * 0.15 + 0.5
    if kind == "uniform":
        return rng.random((n, dim))
    if kind in ("mixture", "blobs"):
        centres = rng.random((3, dim)) * 0.7 + 0.15
        which = rng.integers(0, 3, n)
        return centres[which] + 0.05 * rng.standard_normal((n, dim))
    if kind == "moons":  # two interleaved half circles (as scikit-learn's make_moons), in [0, 1]²
        upper = rng.random(n) < 0.5
        t = rng.random(n) * np.pi
        xy = np.stack([np.where(upper, np.cos(t), 1.0 - np.cos(t)), np.where(upper, np.sin(t), 0.5 - np.sin(t))], 1)
        pts = np.zeros((n, max(dim, 2)))
        pts[:, :2] = (xy + [1.0, 0.75]) / 4.0 + 0.02 * rng.standard_normal((n, 2))
        return pts[:, :dim]
    if kind == "square":  # the outline of a square, a little noise
        side = rng.integers(0, 4, n)
        t = rng.random(n)
        corners = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
        xy = corners[side] + (corners[(side + 1) % 4] - corners[side]) * t[:, None]
        pts = np.zeros((n, max(dim, 2)))
        pts[:, :2] = 0.2 + 0.6 * xy + 0.01 * rng.standard_normal((n, 2))
        return pts[:, :dim]
    angle = rng.random(n) * 2 * np.pi
    radius = 0.35 + 0.03 * rng.standard_normal(n)
    pts = np.zeros((n, dim))
    pts[:, 0] = 0.5 + radius * np.cos(angle)
    pts[:, 1 % dim] = 0.5 + radius * np.sin(angle)
    return pts


# --- memory ----------------------------------------------------------------------------------------------------


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def dense_bytes(n: int, m: int | None = None, dtype: torch.dtype = torch.float64, copies: float = 1) -> int:
    """Bytes of ``copies`` dense n × m arrays of ``dtype`` (8 n² per copy in float64)."""
    m = n if m is None else m
    return int(round(copies * _itemsize(dtype))) * int(n) * int(m)


def largest_n(limit_bytes: int, dtype: torch.dtype = torch.float64, copies: float = 1) -> int:
    """The largest n whose ``copies`` dense n × n arrays of ``dtype`` fit in ``limit_bytes``."""
    per_entry = max(1, int(round(max(copies, 1e-9) * _itemsize(dtype))))
    return max(0, math.isqrt(max(0, int(limit_bytes)) // per_entry))


def default_memory_limit(device: str | torch.device = "cpu", fraction: float = 0.5) -> int:
    """Bytes a dense OT problem may use on ``device``: ``fraction`` of the memory now free there."""
    device = torch.device(device)
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free * fraction)
    try:
        import psutil

        return int(psutil.virtual_memory().available * fraction)
    except Exception:  # noqa: BLE001 - psutil missing or unreadable /proc: a conservative 2 GiB
        return 2 * 2**30


def check_dense_fits(n: int, m: int | None = None, dtype: torch.dtype = torch.float64, *,
                     limit_bytes: int | None = None, device: str | torch.device = "cpu", copies: int = 1) -> int:
    """Raise :class:`ProblemTooLarge` unless ``copies`` dense n × m arrays fit; returns the bytes needed."""
    m = n if m is None else m
    limit = default_memory_limit(device) if limit_bytes is None else int(limit_bytes)
    need = dense_bytes(n, m, dtype, copies)
    if need > limit:
        raise ProblemTooLarge(n, m, need, limit, largest_n(limit, dtype, copies), dtype)
    return need


def solver_bytes_per_entry(cost_dtype: torch.dtype = torch.float64, dtype: torch.dtype = torch.float64) -> int:
    """Bytes per (i, j) the solver keeps: the cost (in ``cost_dtype``) and one plan (``backends.ot.dense``)."""
    return _itemsize(cost_dtype) + _itemsize(dtype)


def check_solver_fits(n: int, m: int, cost_dtype: torch.dtype = torch.float64, dtype: torch.dtype = torch.float64, *,
                      limit_bytes: int | None = None, device: str | torch.device = "cpu") -> int:
    """Raise :class:`ProblemTooLarge` unless the solver's cost and plan fit; names what n fits in each precision."""
    from .dense import BLOCK_ENTRIES

    limit = default_memory_limit(device) if limit_bytes is None else int(limit_bytes)
    blocks = 4 * BLOCK_ENTRIES * _itemsize(dtype) if n * m > BLOCK_ENTRIES else 0  # row-block temporaries
    need = solver_bytes_per_entry(cost_dtype, dtype) * int(n) * int(m) + blocks
    if need > limit:
        room = max(0, limit - blocks)
        n64 = math.isqrt(room // solver_bytes_per_entry(dtype, dtype))
        n32 = math.isqrt(room // solver_bytes_per_entry(torch.float32, dtype))
        raise ProblemTooLarge(n, m, need, limit, n64, dtype, largest_n_float32=n32 if dtype == torch.float64 else None)
    return need


def solver_cost_dtype(n: int, m: int, *, limit_bytes: int | None = None,
                      device: str | torch.device = "cpu") -> torch.dtype:
    """float64 for the cost where the solver fits with it, else float32 (else :class:`ProblemTooLarge`)."""
    try:
        check_solver_fits(n, m, torch.float64, limit_bytes=limit_bytes, device=device)
        return torch.float64
    except ProblemTooLarge:
        check_solver_fits(n, m, torch.float32, limit_bytes=limit_bytes, device=device)
        return torch.float32


# --- costs -----------------------------------------------------------------------------------------------------


def cost_matrix(x: np.ndarray | torch.Tensor, y: np.ndarray | torch.Tensor | None = None, cost: str = "sqeuclidean",
                *, normalize: bool = True, dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu",
                limit_bytes: int | None = None) -> torch.Tensor:
    """The dense cost between point sets x (n, d) and y (m, d): ``"sqeuclidean"`` or ``"l1"``.

    With ``normalize`` the matrix is divided by its maximum (C ∈ [0, 1]). The n × m matrix is checked against
    the memory limit first (:func:`check_dense_fits`), so a too-large problem is refused before allocation.
    """
    if cost not in COSTS:
        raise InputError(f"Unknown cost {cost!r}; choose one of {', '.join(COSTS)}.")
    y = x if y is None else y
    xt = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x, dtype=torch.float64, device=device)
    yt = torch.as_tensor(np.asarray(y) if not isinstance(y, torch.Tensor) else y, dtype=torch.float64, device=device)
    if xt.ndim == 1:
        xt = xt[:, None]
    if yt.ndim == 1:
        yt = yt[:, None]
    check_dense_fits(xt.shape[0], yt.shape[0], dtype, limit_bytes=limit_bytes, device=device)
    from .dense import BLOCK_ENTRIES

    # computed in float64 a block of rows at a time, stored in ``dtype`` (float32 halves a large cost's memory)
    c = torch.empty((xt.shape[0], yt.shape[0]), dtype=dtype, device=device)
    rows = max(1, BLOCK_ENTRIES // max(1, yt.shape[0]))
    yy = (yt * yt).sum(1)[None, :]
    for s in range(0, xt.shape[0], rows):
        xs = xt[s:s + rows]
        if cost == "sqeuclidean":
            block = (xs * xs).sum(1)[:, None] + yy - 2.0 * xs @ yt.T
            block.clamp_(min=0.0)
        else:
            block = torch.cdist(xs, yt, p=1)
        c[s:s + rows] = block
    if normalize:
        top = c.max()
        if top > 0:
            c /= top
    return c


def grid_cost(m: int, cost: str = "sqeuclidean", **kwargs) -> torch.Tensor:
    """The cost between the pixels of an m×m grid (n = m² points, coordinates in [0, 1]); see :func:`cost_matrix`."""
    pts = grid_coordinates(m)
    return cost_matrix(pts, pts, cost, **kwargs)


@dataclass
class Problem:
    """Two histograms a (n,), b (m,) of equal mass and their cost C (n, m), with how they were made."""

    a: torch.Tensor
    b: torch.Tensor
    C: torch.Tensor
    meta: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.a.shape[0])


def grid_problem(m: int, cls_a: str = "grf_smooth", cls_b: str | None = None, seed: int = 0,
                 cost: str = "sqeuclidean", *, dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu",
                 limit_bytes: int | None = None) -> Problem:
    """Two DOTmark-style densities on an m×m grid (seeds ``seed`` and ``seed + 1``; class b defaults to a's)."""
    cls_b = cls_a if cls_b is None else cls_b
    C = grid_cost(m, cost, dtype=dtype, device=device, limit_bytes=limit_bytes)
    a = torch.as_tensor(density(cls_a, m, seed).ravel(), dtype=dtype, device=device)
    b = torch.as_tensor(density(cls_b, m, seed + 1).ravel(), dtype=dtype, device=device)
    return Problem(a, b, C, {"kind": "grid", "m": m, "classes": (cls_a, cls_b), "seeds": (seed, seed + 1),
                             "cost": cost})


def cloud_problem(n: int, kind_a: str = "gaussian", kind_b: str = "blobs", seed: int = 0,
                  cost: str = "sqeuclidean", *, dim: int = 2, dtype: torch.dtype = torch.float64,
                  device: str | torch.device = "cpu", limit_bytes: int | None = None) -> Problem:
    """Two point clouds of n points with uniform weights and their (normalized) cost."""
    x = point_cloud(kind_a, n, seed, dim)
    y = point_cloud(kind_b, n, seed + 1, dim)
    C = cost_matrix(x, y, cost, dtype=dtype, device=device, limit_bytes=limit_bytes)
    w = torch.full((n,), 1.0 / n, dtype=dtype, device=device)
    return Problem(w, w.clone(), C, {"kind": "cloud", "n": n, "kinds": (kind_a, kind_b), "seeds": (seed, seed + 1),
                                     "cost": cost, "x": x, "y": y})
