"""Gaussians to files that common splat viewers open: the 3DGS ``.ply`` layout and antimatter15's ``.splat``.

3DGS ``.ply`` (binary little-endian, one vertex per Gaussian, the field order of the Inria trainer's output):
x y z, nx ny nz (zeros), f_dc_0..2 (degree-0 spherical-harmonic colour, rgb = 0.5 + C0·f_dc), f_rest_0..44
(the degree-1–3 coefficients: zeros, our colours do not depend on the view — written because viewers
built on the reference loader expect all 48 coefficients), opacity (logit), scale_0..2 (log of the
standard deviations), rot_0..3 (unit quaternion w x y z). ``.splat``: 32 bytes per Gaussian — position and
linear scales as float32, RGBA as uint8, the quaternion (w x y z) as uint8 (q·128 + 128). Our Gaussians
carry full covariances; writing them means an eigen-decomposition Σ = R diag(s²) Rᵀ with R a rotation.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import torch

from backends.common.errors import InputError

from .gom import Gaussians

SH_C0 = 0.28209479177387814
MIN_SCALE = 1e-7
SH_REST = 45  # 3 colours × 15 coefficients of degrees 1–3
_PLY_FIELDS = (["x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2"] + [f"f_rest_{i}" for i in range(SH_REST)]
               + ["opacity"] + [f"scale_{i}" for i in range(3)] + [f"rot_{i}" for i in range(4)])


def covariance_to_scale_rotation(covars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """N×3×3 covariances → N×3 standard deviations and N×4 unit quaternions (w, x, y, z)."""
    vals, vecs = np.linalg.eigh(np.asarray(covars, dtype=np.float64))
    flip = np.linalg.det(vecs) < 0
    vecs[flip, :, 0] *= -1  # a proper rotation (det +1); flipping an eigenvector keeps Σ
    return np.sqrt(np.clip(vals, MIN_SCALE ** 2, None)), matrix_to_quaternion(vecs)


def matrix_to_quaternion(r: np.ndarray) -> np.ndarray:
    """N×3×3 rotations → N×4 unit quaternions (w, x, y, z), w ≥ 0 (Shepperd's method)."""
    r = np.asarray(r, dtype=np.float64)
    m00, m11, m22 = r[:, 0, 0], r[:, 1, 1], r[:, 2, 2]
    candidates = np.stack([
        np.stack([1 + m00 + m11 + m22, r[:, 2, 1] - r[:, 1, 2], r[:, 0, 2] - r[:, 2, 0], r[:, 1, 0] - r[:, 0, 1]], -1),
        np.stack([r[:, 2, 1] - r[:, 1, 2], 1 + m00 - m11 - m22, r[:, 0, 1] + r[:, 1, 0], r[:, 0, 2] + r[:, 2, 0]], -1),
        np.stack([r[:, 0, 2] - r[:, 2, 0], r[:, 0, 1] + r[:, 1, 0], 1 - m00 + m11 - m22, r[:, 1, 2] + r[:, 2, 1]], -1),
        np.stack([r[:, 1, 0] - r[:, 0, 1], r[:, 0, 2] + r[:, 2, 0], r[:, 1, 2] + r[:, 2, 1], 1 - m00 - m11 + m22], -1),
    ], 1)  # N×4×4: 4·q·q_k for each choice of the largest component k
    best = np.argmax(np.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], -1), -1)
    q = candidates[np.arange(len(r)), best]
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q * np.where(q[:, :1] < 0, -1.0, 1.0)


def quaternion_to_matrix(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    w, x, y, z = (q / np.linalg.norm(q, axis=1, keepdims=True)).T
    return np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                     2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                     2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1).reshape(-1, 3, 3)


def _arrays(g: Gaussians) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    def np_(t):
        return t.detach().cpu().double().numpy() if isinstance(t, torch.Tensor) else np.asarray(t, np.float64)
    means, covars, colors, opac = np_(g.means), np_(g.covars), np_(g.colors), np_(g.opacities)
    if means.ndim != 2 or means.shape[1] != 3 or covars.shape != (len(means), 3, 3) \
            or colors.shape != (len(means), 3) or opac.shape != (len(means),):
        raise InputError("Gaussians to export need N×3 means, N×3×3 covariances, N×3 colours and N opacities.")
    if len(means) == 0:
        raise InputError("There are no Gaussians to export.")
    return means, covars, colors, opac


def ply_bytes(g: Gaussians) -> bytes:
    """The Gaussians in the standard 3DGS ``.ply`` layout."""
    means, covars, colors, opac = _arrays(g)
    scales, quats = covariance_to_scale_rotation(covars)
    p = np.clip(opac, 1e-4, 1 - 1e-4)
    data = np.zeros(len(means), dtype=[(name, "<f4") for name in _PLY_FIELDS])
    for i, axis in enumerate("xyz"):
        data[axis] = means[:, i]
    for i in range(3):
        data[f"f_dc_{i}"] = (colors[:, i] - 0.5) / SH_C0
        data[f"scale_{i}"] = np.log(scales[:, i])
    for i in range(4):
        data[f"rot_{i}"] = quats[:, i]
    data["opacity"] = np.log(p / (1 - p))
    header = "ply\nformat binary_little_endian 1.0\n" + f"element vertex {len(means)}\n" \
        + "".join(f"property float {name}\n" for name in _PLY_FIELDS) + "end_header\n"
    return header.encode("ascii") + data.tobytes()


def write_ply(g: Gaussians, path: str | Path) -> Path:
    from backends.common.files import write_bytes

    return write_bytes(path, ply_bytes(g))


def read_ply(source: str | Path | bytes) -> Gaussians:
    """Read a 3DGS ``.ply`` (binary little-endian, float properties; normals, f_rest_* and other extra
    properties are optional and skipped) back into Gaussians with full covariances."""
    raw = source if isinstance(source, bytes) else Path(source).read_bytes()
    end = raw.find(b"end_header\n")
    if not raw.startswith(b"ply\n") or end < 0:
        raise InputError("This is not a PLY file (no 'ply' magic or no end of header).")
    header = raw[:end].decode("ascii", errors="replace").splitlines()
    if "format binary_little_endian 1.0" not in header:
        raise InputError("Only binary little-endian PLY files of Gaussians can be read.")
    count, props = None, []
    for line in header:
        parts = line.split()
        if parts[:2] == ["element", "vertex"]:
            count = int(parts[2])
        elif parts[:1] == ["property"] and count is not None:
            if parts[1] not in ("float", "float32"):
                raise InputError(f"PLY property {parts[-1]} is {parts[1]}; Gaussians are stored as floats.")
            props.append(parts[2])
    missing = [f for f in _PLY_FIELDS if f not in props and not f.startswith(("n", "f_rest"))]
    if count is None or missing:
        raise InputError(f"This PLY has no Gaussians in the 3DGS layout (missing: {', '.join(missing) or 'vertices'}).")
    data = np.frombuffer(raw, dtype=[(p, "<f4") for p in props], count=count, offset=end + len(b"end_header\n"))
    means = np.stack([data[a] for a in "xyz"], 1).astype(np.float64)
    colors = 0.5 + SH_C0 * np.stack([data[f"f_dc_{i}"] for i in range(3)], 1).astype(np.float64)
    scales = np.exp(np.stack([data[f"scale_{i}"] for i in range(3)], 1).astype(np.float64))
    rot = quaternion_to_matrix(np.stack([data[f"rot_{i}"] for i in range(4)], 1))
    m = rot * scales[:, None, :]
    opac = 1 / (1 + np.exp(-data["opacity"].astype(np.float64)))
    t = torch.from_numpy
    return Gaussians(t(means), t(m @ m.transpose(0, 2, 1)), t(colors), t(opac))


def splat_bytes(g: Gaussians) -> bytes:
    """The Gaussians in antimatter15's ``.splat`` format (32 bytes each, most opaque and largest first)."""
    means, covars, colors, opac = _arrays(g)
    scales, quats = covariance_to_scale_rotation(covars)
    order = np.argsort(-(scales.prod(1) * opac), kind="stable")
    rec = np.zeros(len(means), dtype=[("pos", "<f4", 3), ("scale", "<f4", 3), ("rgba", "u1", 4), ("rot", "u1", 4)])
    rec["pos"] = means[order]
    rec["scale"] = scales[order]
    rgba = np.concatenate([colors[order], opac[order, None]], 1)
    rec["rgba"] = np.clip(np.round(rgba * 255), 0, 255)
    rec["rot"] = np.clip(np.round(quats[order] * 128 + 128), 0, 255)
    buf = io.BytesIO()
    buf.write(rec.tobytes())
    return buf.getvalue()
