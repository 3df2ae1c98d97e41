"""Which mesh vertices each camera sees, by ray casting (LIFe-GoM rasterises with nvdiffrast on CUDA).

A vertex is visible from a camera when it projects inside the image and the ray from the camera centre
to it hits nothing nearer than the vertex itself. Visibility gates which views' pixel features a vertex
takes; it is not differentiated.
"""

from __future__ import annotations

import numpy as np
import torch


def vertex_visibility(vertices: torch.Tensor, faces: np.ndarray, viewmats: torch.Tensor, Ks: torch.Tensor,
                      width: int, height: int, tolerance: float = 2e-3) -> torch.Tensor:
    """vertices [..., V, 3] (one posed mesh per camera, or one for all), viewmats [..., 4, 4] world → camera,
    Ks [..., 3, 3] → bool [..., V]."""
    import open3d as o3d
    import open3d.core as o3c

    lead = viewmats.shape[:-2]
    v_all = vertices.detach().cpu().double().expand(*lead, *vertices.shape[-2:]).reshape(-1, vertices.shape[-2], 3)
    e_all = viewmats.detach().cpu().double().reshape(-1, 4, 4)
    k_all = Ks.detach().cpu().double().reshape(-1, 3, 3)
    tri = o3c.Tensor(np.asarray(faces, dtype=np.uint32))
    out = np.zeros((len(e_all), v_all.shape[1]), dtype=bool)
    for i, (v, e, k) in enumerate(zip(v_all.numpy(), e_all.numpy(), k_all.numpy(), strict=True)):
        cam = v @ e[:3, :3].T + e[:3, 3]
        z = cam[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            u = k[0, 0] * cam[:, 0] / z + k[0, 2]
            w = k[1, 1] * cam[:, 1] / z + k[1, 2]
        inside = (z > 1e-6) & (u >= 0) & (u < width) & (w >= 0) & (w < height)
        centre = -e[:3, :3].T @ e[:3, 3]
        dirs = v - centre
        dist = np.linalg.norm(dirs, axis=1)
        rays = np.concatenate([np.broadcast_to(centre, dirs.shape), dirs / dist[:, None]], 1).astype(np.float32)
        scene = o3d.t.geometry.RaycastingScene()
        scene.add_triangles(o3c.Tensor(v.astype(np.float32)), tri)
        hit = scene.cast_rays(o3c.Tensor(rays))["t_hit"].numpy()
        out[i] = inside & (hit >= dist - tolerance * np.maximum(dist, 1.0))
    return torch.from_numpy(out.reshape(*lead, v_all.shape[1]))
