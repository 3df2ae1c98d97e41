"""Coupled multi-resolution Gaussians-on-Mesh (GoM), LIFe-GoM's avatar representation.

The avatar is a coarse mesh (the body template's vertices, which reconstruction moves) and its midpoint
subdivision, whose vertices are fixed barycentric blends of the coarse ones — the coupling: the fine
geometry is a linear function of the coarse xyz. Each fine face carries one Gaussian. Its frame comes
from the posed triangle: the Steiner inellipse's two axes (×2) in the face plane and a thin normal axis
(×0.001); per-face residuals (rotation as axis-angle, scale, offset, colour) act inside that frame, so
after linear blend skinning of the coarse mesh the Gaussians move, turn and stretch with their faces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from .body import skin

NORMAL_SCALE = 1e-3  # thickness of a Gaussian along its face normal, relative to the unit axis


@dataclass(frozen=True)
class Subdivision:
    """Midpoint subdivision of a coarse mesh, each fine vertex a fixed blend of ≤ 3 coarse vertices.

    Fine vertices keep the coarse numbering first (vertex i < n_coarse is coarse vertex i), then the
    edge midpoints of each level. ``parent`` is the coarse face each fine face lies in.
    """

    coarse_faces: np.ndarray  # Fc×3
    faces: np.ndarray  # Ff×3, Ff = Fc·4^levels
    indices: np.ndarray  # Vf×3 coarse vertex ids
    weights: np.ndarray  # Vf×3 blend weights (rows sum to 1; unused slots weigh 0)
    parent: np.ndarray  # Ff
    levels: int

    @property
    def n_fine_vertices(self) -> int:
        return len(self.indices)

    def fine_vertices(self, coarse: torch.Tensor) -> torch.Tensor:
        """[..., Vc, 3] → [..., Vf, 3]: the coupling, linear (and differentiable) in the coarse xyz."""
        idx = torch.tensor(self.indices).to(coarse.device)
        w = torch.tensor(self.weights).to(coarse.device, coarse.dtype)
        return (coarse[..., idx, :] * w[..., None]).sum(-2)


def subdivide(faces: np.ndarray, n_vertices: int, levels: int = 1) -> Subdivision:
    """Split every triangle into four at its edge midpoints, ``levels`` times (0 keeps the coarse mesh).

    Every fine face lies in one coarse face; its corners are tracked as barycentric coordinates in that
    face, so each fine vertex is an exact blend of that face's three coarse vertices.
    """
    faces = np.asarray(faces, dtype=np.int64)
    if not 0 <= levels <= 4:
        raise ValueError(f"subdivision levels must be 0..4, not {levels}")
    fine, parent = faces, np.arange(len(faces))
    bary = np.broadcast_to(np.eye(3), (len(faces), 3, 3)).copy()  # corner × coarse-corner weights
    n = n_vertices
    for _ in range(levels):
        edges = np.sort(np.stack([fine[:, [0, 1]], fine[:, [1, 2]], fine[:, [2, 0]]], 1).reshape(-1, 2), 1)
        unique, inverse = np.unique(edges, axis=0, return_inverse=True)
        mid = inverse.reshape(-1, 3) + n  # ids of the midpoints of edges 01, 12, 20 of each face
        n += len(unique)
        b0, b1, b2 = bary[:, 0], bary[:, 1], bary[:, 2]
        b01, b12, b20 = (b0 + b1) / 2, (b1 + b2) / 2, (b2 + b0) / 2
        v0, v1, v2 = fine.T
        m01, m12, m20 = mid.T
        fine = np.stack([np.stack([v0, m01, m20], 1), np.stack([m01, v1, m12], 1),
                         np.stack([m20, m12, v2], 1), np.stack([m01, m12, m20], 1)], 1).reshape(-1, 3)
        bary = np.stack([np.stack([b0, b01, b20], 1), np.stack([b01, b1, b12], 1),
                         np.stack([b20, b12, b2], 1), np.stack([b01, b12, b20], 1)], 1).reshape(-1, 3, 3)
        parent = np.repeat(parent, 4)
    # each fine vertex: take the first fine face that uses it
    flat = fine.reshape(-1)
    order = np.argsort(flat, kind="stable")
    first = order[np.searchsorted(flat[order], np.arange(n))]
    face, slot = first // 3, first % 3
    indices = faces[parent[face]]
    weights = bary[face, slot]
    return Subdivision(faces, fine, indices, weights, parent, levels)


def steiner_frame(triangles: torch.Tensor, normal_scale: float = NORMAL_SCALE) -> torch.Tensor:
    """[..., 3, 3] triangles (corners in rows) → [..., 3, 3] frames T whose columns are the Steiner
    inellipse's semi-axes ×2 and the unit normal (a0 × a1, against the corners' winding, for every face
    alike) × ``normal_scale``.

    The Steiner inellipse (tangent to each side at its midpoint) is c + f1 cos t + f2 sin t with
    f1 = (v2 − c)/2 and f2 = (v1 − v0)/(2√3); its axes are at t0 = ½·atan2(2 f1·f2, |f1|² − |f2|²).
    A unit Gaussian mapped by T (Σ = T Tᵀ) covers the face and is thin across it.
    """
    c = triangles.mean(-2)
    f1 = 0.5 * (triangles[..., 2, :] - c)
    f2 = (triangles[..., 1, :] - triangles[..., 0, :]) / (2 * math.sqrt(3.0))
    y = 2 * (f1 * f2).sum(-1)
    x = (f1 * f1).sum(-1) - (f2 * f2).sum(-1)
    circle = (x * x + y * y) < 1e-24  # any orientation will do; keep atan2's gradient finite
    t0 = 0.5 * torch.where(circle, torch.zeros_like(x), torch.atan2(torch.where(circle, torch.zeros_like(y), y),
                                                                    torch.where(circle, torch.ones_like(x), x)))
    cos, sin = torch.cos(t0)[..., None], torch.sin(t0)[..., None]
    a0 = f1 * cos + f2 * sin
    a1 = -f1 * sin + f2 * cos
    normal = F.normalize(torch.linalg.cross(a0, a1), dim=-1) * normal_scale
    return torch.stack([2 * a0, 2 * a1, normal], -1)


def so3_exp(axis_angle: torch.Tensor) -> torch.Tensor:
    """Rodrigues: [..., 3] axis-angle → [..., 3, 3] rotation, smooth (and with finite gradients) at 0."""
    theta2 = (axis_angle * axis_angle).sum(-1)
    small = theta2 < 1e-8
    theta = torch.sqrt(torch.where(small, torch.ones_like(theta2), theta2))
    a = torch.where(small, 1 - theta2 / 6, torch.sin(theta) / theta)
    b = torch.where(small, 0.5 - theta2 / 24, (1 - torch.cos(theta)) / (theta * theta))
    x, y, z = axis_angle.unbind(-1)
    zero = torch.zeros_like(x)
    k = torch.stack([zero, -z, y, z, zero, -x, -y, x, zero], -1).reshape(axis_angle.shape[:-1] + (3, 3))
    eye = torch.eye(3, dtype=axis_angle.dtype, device=axis_angle.device)
    return eye + a[..., None, None] * k + b[..., None, None] * (k @ k)


@dataclass
class FaceParams:
    """Per-fine-face Gaussian parameters, in the face's Steiner frame (LIFe-GoM's initial values:
    rotation 0, scale 1, offset 0; colour starts mid-grey)."""

    rgb: torch.Tensor  # F×3
    so3: torch.Tensor  # F×3 axis-angle
    scale: torch.Tensor  # F×3
    offset: torch.Tensor  # F×3, in frame units (T @ offset is added to the centroid)

    @staticmethod
    def initial(n_faces: int, dtype=torch.float32, device=None) -> FaceParams:
        z = torch.zeros(n_faces, 3, dtype=dtype, device=device)
        return FaceParams(z + 0.5, z.clone(), z + 1.0, z.clone())

    def residual(self, rgb=None, so3=None, scale=None, offset=None) -> FaceParams:
        """These parameters plus residuals (the reconstructor's updates are residuals from the initial values)."""
        def add(a, b):
            return a if b is None else a + b
        return FaceParams(add(self.rgb, rgb), add(self.so3, so3), add(self.scale, scale), add(self.offset, offset))


@dataclass
class Gaussians:
    """3D Gaussians ready to render: world means and covariances, colours and opacities."""

    means: torch.Tensor  # N×3
    covars: torch.Tensor  # N×3×3
    colors: torch.Tensor  # N×C
    opacities: torch.Tensor  # N


def gaussians_on_faces(vertices: torch.Tensor, faces: np.ndarray, params: FaceParams) -> Gaussians:
    """One Gaussian per face of the (posed) mesh: mean = centroid + T·offset, Σ = T R S Sᵀ Rᵀ Tᵀ."""
    tri = vertices[torch.tensor(np.asarray(faces, dtype=np.int64)).to(vertices.device)]  # F×3×3
    frame = steiner_frame(tri)
    m = frame @ so3_exp(params.so3.to(frame.dtype)) * params.scale.to(frame.dtype)[..., None, :]
    means = tri.mean(-2) + (frame @ params.offset.to(frame.dtype)[..., None])[..., 0]
    opacities = torch.ones(len(tri), dtype=frame.dtype, device=frame.device)
    return Gaussians(means, m @ m.transpose(-1, -2), params.rgb.to(frame.dtype), opacities)


@dataclass
class GoMAvatar:
    """An animatable avatar: canonical coarse vertices, their LBS weights, the subdivision, face params."""

    coarse_xyz: torch.Tensor  # Vc×3, canonical (rest) pose
    lbs_weights: torch.Tensor  # Vc×J
    subdivision: Subdivision
    params: FaceParams

    def posed_fine_vertices(self, transforms: torch.Tensor) -> torch.Tensor:
        """Skin the coarse mesh with J×4×4 bone transforms, then blend its subdivision."""
        posed = skin(self.coarse_xyz, self.lbs_weights, transforms)
        return self.subdivision.fine_vertices(posed)

    def gaussians(self, transforms: torch.Tensor) -> Gaussians:
        return gaussians_on_faces(self.posed_fine_vertices(transforms), self.subdivision.faces, self.params)
