"""What the browser's splat viewer needs to show and re-pose an avatar itself.

Sent once per avatar (``avatar_payload``): the Gaussians in the rest pose (centre, scales, rotation,
colour, opacity) and each one's four strongest bones with weights (its face's blend of the coarse
vertices' LBS weights), plus the rendering mesh (rest vertices, faces, colours, per-vertex bones).
Sent per pose (``bones_payload``): one rigid transform per bone (quaternion + translation, rest →
posed) — a few kilobytes, so the sliders re-pose the avatar live: the viewer (Spark's SplatSkinning)
blends the bones per splat on the GPU and skins the mesh on the CPU; nothing else is re-sent.
Binary arrays travel as base64 of little-endian float32 / uint8 / uint32.
"""

from __future__ import annotations

import base64
import uuid

import numpy as np
import torch

from .export import covariance_to_scale_rotation, matrix_to_quaternion
from .outputs import vertex_colours
from .pose import Pose
from .service import EPS2D_PX, FILTER_SHARE, AvatarResult

BONES_PER_SPLAT = 4


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def top_bones(weights: np.ndarray, k: int = BONES_PER_SPLAT) -> np.ndarray:
    """N×J weights → N×2k uint8: the k strongest bone indices, then their weights in 0..255 summing to 255."""
    idx = np.argsort(-weights, axis=1, kind="stable")[:, :k]
    w = np.take_along_axis(weights, idx, 1).clip(min=0)
    w = w / np.maximum(w.sum(1, keepdims=True), 1e-12)
    q = np.floor(w * 255).astype(np.int64)
    q[:, 0] += 255 - q.sum(1)  # the strongest takes the rounding remainder
    if weights.shape[1] > 255:
        raise ValueError("the viewer addresses at most 256 bones")
    return np.concatenate([idx, q], 1).astype(np.uint8)


def avatar_payload(result: AvatarResult) -> dict:
    """The once-per-avatar data (see the module docstring); ``id`` tells the viewer a new avatar arrived."""
    a = result.avatar
    sub = a.subdivision
    n_bones = a.lbs_weights.shape[1]
    with torch.no_grad():
        identity = torch.eye(4).repeat(n_bones, 1, 1)
        g = a.gaussians(identity)
        if result.pixel_size > 0:  # the same world-space low-pass as result.gaussians (the viewer is a fine view)
            var = FILTER_SHARE * EPS2D_PX * result.pixel_size ** 2
            g = type(g)(g.means, g.covars + var * torch.eye(3, dtype=g.covars.dtype), g.colors, g.opacities)
        fine_w = sub.fine_vertices(a.lbs_weights.double()).numpy()  # Vf×J: the coupling applies to weights too
        rest_v = a.posed_fine_vertices(identity).numpy().astype(np.float32)
    face_w = fine_w[sub.faces].mean(1)
    scales, quats = covariance_to_scale_rotation(g.covars.numpy())
    splats = np.concatenate([g.means.numpy(), scales, quats[:, [1, 2, 3, 0]],  # three.js quaternions are x y z w
                             g.colors.clamp(0, 1).numpy(), g.opacities.numpy()[:, None]], 1).astype("<f4")
    lo, hi = rest_v.min(0), rest_v.max(0)
    return {
        "id": uuid.uuid4().hex[:12],
        "count": len(splats),
        "splats": _b64(splats),  # N×14: centre 3, scales 3, quaternion 4 (x y z w), rgb 3, opacity 1
        "splat_bones": _b64(top_bones(face_w)),  # N×8 uint8
        "bones": n_bones,
        "mesh": {"vertices": _b64(rest_v.astype("<f4")), "faces": _b64(sub.faces.astype("<u4")),
                 "colours": _b64(np.round(vertex_colours(a) * 255).astype(np.uint8)),
                 "bones": _b64(top_bones(fine_w))},
        "centre": ((lo + hi) / 2).round(4).tolist(),
        "extent": float(np.max(hi - lo)),
    }


def bones_payload(result: AvatarResult, pose: Pose, avatar_id: str = "") -> dict:
    """Rest → posed transform of every bone as [qx, qy, qz, qw, tx, ty, tz]."""
    t = result.skeleton.transforms(pose).double().numpy()
    q = matrix_to_quaternion(t[:, :3, :3])[:, [1, 2, 3, 0]]
    return {"id": avatar_id, "pose": pose.as_dict(),
            "bones": np.concatenate([q, t[:, :3, 3]], 1).round(6).tolist()}
