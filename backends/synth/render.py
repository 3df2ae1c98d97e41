"""Ray-cast rendering of primitive-world scenes with open3d.

One cast gives, per pixel: the shaded colour (ambient + Lambert from a directional light, with cast
shadows), the metric z-depth, which object was hit, its 3D point and normal. Rendering the objects'
boxes instead of their shapes gives the loose "box depth" that Build-A-Scene conditions on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

import numpy as np

from .camera import Camera
from .scene import Primitive, Scene, yaw_matrix
from .texture import SolidTexture

WALL_Y = 3.4
LIGHT_DIR = np.array([-0.45, -0.55, 0.70]) / np.linalg.norm([-0.45, -0.55, 0.70])  # towards the light
AMBIENT = 0.42
BACKGROUND = -2  # instance id where a ray hits nothing
ROOM = -1  # instance id of floor and wall


@dataclass
class RenderOutput:
    rgb: np.ndarray  # H×W×3 uint8
    depth: np.ndarray  # H×W float32, z-depth in scene units (inf where nothing was hit)
    instance: np.ndarray  # H×W int16: object index, ROOM (-1) or BACKGROUND (-2)
    points: np.ndarray  # H×W×3 float32 world hit points (inf where nothing was hit)
    normals: np.ndarray  # H×W×3 float32, facing the camera

    def mask(self, index: int) -> np.ndarray:
        """Visible pixels of object ``index`` (bool H×W)."""
        return self.instance == index

    def near_bright_depth(self) -> np.ndarray:
        """Depth as Build-A-Scene feeds ControlNet: min-max over hit pixels, near = 1, no hit = 0."""
        hit = np.isfinite(self.depth)
        out = np.zeros_like(self.depth, dtype=np.float32)
        if hit.any():
            d = self.depth[hit]
            lo, hi = d.min(), d.max()
            out[hit] = 1.0 - (d - lo) / (hi - lo if hi > lo else 1.0)
        return out


@cache
def unit_mesh(shape: str, as_box: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (filling the cube [-0.5, 0.5]³) and triangles of a shape's mesh."""
    import open3d as o3d

    T = o3d.geometry.TriangleMesh
    if as_box or shape == "cube":
        mesh = T.create_box(1.0, 1.0, 1.0)
    elif shape == "sphere":
        mesh = T.create_sphere(0.5, resolution=24)
    elif shape == "cylinder":
        mesh = T.create_cylinder(0.5, 1.0, resolution=32)
    elif shape == "cone":
        mesh = T.create_cone(0.5, 1.0, resolution=32)
    elif shape == "torus":
        mesh = T.create_torus(0.35, 0.15, radial_resolution=40, tubular_resolution=16)
    else:
        raise ValueError(f"unknown shape {shape!r}")
    v = np.asarray(mesh.vertices, dtype=np.float64)
    lo, hi = v.min(0), v.max(0)
    v = (v - (lo + hi) / 2) / (hi - lo)
    return v.astype(np.float32), np.asarray(mesh.triangles, dtype=np.uint32)


def primitive_vertices(obj: Primitive, as_box: bool = False) -> tuple[np.ndarray, np.ndarray]:
    v, t = unit_mesh(obj.shape, as_box)
    world = (v * np.asarray(obj.size)) @ yaw_matrix(obj.yaw_deg).T + np.asarray(obj.center)
    return world.astype(np.float32), t


def room_meshes() -> list[tuple[np.ndarray, np.ndarray]]:
    """Floor and back wall as (vertices, triangles), the same in every room (box depth casts them alone)."""
    quad = np.array([[0, 1, 2], [0, 2, 3]], dtype=np.uint32)
    floor = np.array([[-12, -8, 0], [12, -8, 0], [12, WALL_Y, 0], [-12, WALL_Y, 0]], dtype=np.float32)
    wall = np.array([[-12, WALL_Y, 0], [12, WALL_Y, 0], [12, WALL_Y, 12], [-12, WALL_Y, 12]], dtype=np.float32)
    return [(floor, quad), (wall, quad)]


def render(scene: Scene, camera: Camera | None = None, as_boxes: bool = False, shadows: bool = True,
           supersample: int = 1, room: bool = True, only: tuple[int, ...] | None = None,
           textures: Mapping[int | str, SolidTexture] | None = None, light_dir: np.ndarray | None = None,
           ambient: float | None = None) -> RenderOutput:
    """Render ``scene`` from ``camera`` (default: the scene's).

    ``as_boxes`` renders each object's 3D box instead of its shape; ``only`` keeps a subset of the
    objects (by index; ``instance`` keeps the original indices); ``room=False`` drops floor and wall.
    ``supersample`` > 1 anti-aliases the colour (depth, ids and points come from the centre sample).
    ``textures`` maps an object index, ``"floor"`` or ``"wall"`` to a solid texture (object textures
    live in the object's box frame, so they move with it); ``light_dir`` (towards the light) and
    ``ambient`` override the default lighting.
    """
    import open3d as o3d
    import open3d.core as o3c

    camera = camera or scene.camera
    k = max(1, int(supersample))
    cam = camera.with_size(camera.width * k, camera.height * k) if k > 1 else camera

    textures = textures or {}
    light = LIGHT_DIR if light_dir is None else np.asarray(light_dir, np.float64) / np.linalg.norm(light_dir)
    ambient = AMBIENT if ambient is None else float(ambient)
    rc = o3d.t.geometry.RaycastingScene()
    colours: dict[int, tuple[np.ndarray, int]] = {}
    frames: dict[int, tuple[SolidTexture, np.ndarray, np.ndarray]] = {}  # gid → texture, origin, rotation
    if room:
        for mesh, colour, name in zip(room_meshes(), (scene.room.floor, scene.room.wall), ("floor", "wall"),
                                      strict=True):
            gid = rc.add_triangles(o3c.Tensor(mesh[0]), o3c.Tensor(mesh[1]))
            colours[gid] = (np.asarray(colour), ROOM)
            if name in textures:
                frames[gid] = (textures[name], np.zeros(3), np.eye(3))
    for i, obj in enumerate(scene.objects):
        if only is not None and i not in only:
            continue
        v, t = primitive_vertices(obj, as_boxes)
        gid = rc.add_triangles(o3c.Tensor(v), o3c.Tensor(t))
        colours[gid] = (np.asarray(obj.rgb), i)
        if i in textures:
            frames[gid] = (textures[i], np.asarray(obj.center, np.float64), yaw_matrix(obj.yaw_deg))

    rays = cam.rays()
    hit = rc.cast_rays(o3c.Tensor(rays))
    t = hit["t_hit"].numpy()
    gids = hit["geometry_ids"].numpy()
    normals = hit["primitive_normals"].numpy()
    dirs = rays[..., 3:]
    finite = np.isfinite(t)
    flip = np.sum(normals * dirs, -1) > 0
    normals = np.where(flip[..., None], -normals, normals)
    points = np.where(finite[..., None], rays[..., :3] + dirs * np.where(finite, t, 0)[..., None], np.inf).astype(np.float32)

    albedo = np.zeros(t.shape + (3,), np.float64)
    instance = np.full(t.shape, BACKGROUND, np.int16)
    for gid, (colour, idx) in colours.items():
        sel = gids == gid
        albedo[sel] = colour
        instance[sel] = idx
        if gid in frames and sel.any():
            texture, origin, rot = frames[gid]
            albedo[sel] = texture.shade((points[sel] - origin) @ rot, colour)

    lambert = np.clip(normals @ light, 0.0, 1.0)
    if shadows and finite.any():
        origins = points[finite] + normals[finite] * 1e-3
        shadow_rays = np.concatenate([origins, np.broadcast_to(light, origins.shape)], 1).astype(np.float32)
        blocked = np.isfinite(rc.cast_rays(o3c.Tensor(shadow_rays))["t_hit"].numpy())
        lam = lambert[finite]
        lam[blocked] = 0.0
        lambert[finite] = lam
    shade = ambient + (1 - ambient) * lambert
    rgb = np.where(finite[..., None], albedo * shade[..., None], 0.0)

    depth = np.where(finite, t, np.inf).astype(np.float32)
    if k > 1:
        h, w = camera.height, camera.width
        rgb = rgb.reshape(h, k, w, k, 3).mean((1, 3))
        c = k // 2
        depth, instance, points, normals = (a[c::k, c::k] for a in (depth, instance, points, normals))
    return RenderOutput(
        rgb=np.clip(rgb * 255 + 0.5, 0, 255).astype(np.uint8),
        depth=np.ascontiguousarray(depth),
        instance=np.ascontiguousarray(instance),
        points=np.ascontiguousarray(points),
        normals=np.ascontiguousarray(normals.astype(np.float32)),
    )
