"""Box depth fast enough for a live preview while a box is dragged (3D Layout's editor; the text-conditioned
Unlearning teacher conditions on the same box depth, so it lives here, beside the renderer it equals).

A full ``backends.synth.render`` of the layout builds a ray-casting scene, casts every pixel, and
shades colours, normals and points that the box depth never uses. Here only what changed is cast:
the camera's rays and the room's depth (floor and back wall are the same in every room) are kept
per camera, and each box is cast alone, only over the pixels its projected corners cover, and kept
per (box, camera); the layout's depth is the nearest of them. Moving one box re-casts that box's
patch only. The result equals the full render's depth (the same rays against the same triangles).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .camera import Camera
from .render import RenderOutput, primitive_vertices, room_meshes
from .scene import Primitive


@lru_cache(maxsize=8)
def camera_rays(camera: Camera) -> np.ndarray:
    """H×W×6 float32 rays of the camera (origin, direction with unit forward component)."""
    rays = camera.rays()
    rays.setflags(write=False)
    return rays


def _cast(meshes, rays: np.ndarray) -> np.ndarray:
    import open3d as o3d
    import open3d.core as o3c

    scene = o3d.t.geometry.RaycastingScene()
    for v, t in meshes:
        scene.add_triangles(o3c.Tensor(v), o3c.Tensor(t))
    return scene.cast_rays(o3c.Tensor(np.ascontiguousarray(rays)))["t_hit"].numpy()


@lru_cache(maxsize=8)
def room_depth(camera: Camera) -> np.ndarray:
    """z-depth of floor and back wall (inf where neither is hit)."""
    t = _cast(room_meshes(), camera_rays(camera))
    t.setflags(write=False)
    return t


def _patch(corners: np.ndarray, camera: Camera) -> tuple[int, int, int, int]:
    """Pixel rows/columns [y0, y1) × [x0, x1) that the corners' projection covers (whole image if behind)."""
    uvz = camera.project(corners)
    if not np.all(uvz[:, 2] > 1e-6):
        return 0, camera.height, 0, camera.width
    x0, y0 = np.floor(uvz[:, :2].min(0)).astype(int) - 1
    x1, y1 = np.ceil(uvz[:, :2].max(0)).astype(int) + 2
    return max(0, y0), min(camera.height, y1), max(0, x0), min(camera.width, x1)


@lru_cache(maxsize=128)
def box_patch(box: Primitive, camera: Camera) -> tuple[tuple[int, int, int, int], np.ndarray]:
    """One box cast alone over its screen patch: ((y0, y1, x0, x1), z-depth of the patch)."""
    y0, y1, x0, x1 = _patch(box.corners(), camera)
    if y1 <= y0 or x1 <= x0:
        return (0, 0, 0, 0), np.zeros((0, 0), np.float32)
    t = _cast([primitive_vertices(box, as_box=True)], camera_rays(camera)[y0:y1, x0:x1])
    t.setflags(write=False)
    return (y0, y1, x0, x1), t


def layout_depth(boxes: tuple[Primitive, ...], camera: Camera, room: bool = True) -> np.ndarray:
    """z-depth (H×W float32, inf = no hit) of the room and the boxes, from cached pieces."""
    depth = np.array(room_depth(camera)) if room else np.full((camera.height, camera.width), np.inf, np.float32)
    for box in boxes:
        (y0, y1, x0, x1), t = box_patch(box, camera)
        np.minimum(depth[y0:y1, x0:x1], t, out=depth[y0:y1, x0:x1])
    return depth


def near_bright(depth: np.ndarray) -> np.ndarray:
    """Build-A-Scene's box depth (near = 1, no hit = 0), by the renderer's own normalisation."""
    return RenderOutput(rgb=None, depth=depth, instance=None, points=None, normals=None).near_bright_depth()
