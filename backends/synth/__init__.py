"""The primitive world: procedural scenes of primitives in a room, rendered with open3d ray casting.

Shared by every capability that needs images with known geometry: RGB, metric depth, instance
masks, the depth of the objects' 3D boxes, per-pixel 3D points, and camera paths for video.

    from backends.synth import random_scene, render
    scene = random_scene(numpy_rng(0))
    out = render(scene, scene.camera)
"""

from .camera import Camera, orbit_path
from .render import RenderOutput, render
from .scene import COLORS, ROOMS, SHAPES, Primitive, Room, Scene, random_scene

__all__ = ["COLORS", "ROOMS", "SHAPES", "Camera", "Primitive", "RenderOutput", "Room", "Scene",
           "orbit_path", "random_scene", "render"]
