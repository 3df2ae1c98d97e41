"""The primitive world: procedural scenes of primitives in a room, rendered with open3d ray casting.

Shared by every capability that needs images with known geometry: RGB, metric depth, instance
masks, the depth of the objects' 3D boxes, per-pixel 3D points, and camera paths for video.

    from backends.synth import random_scene, render
    scene = random_scene(numpy_rng(0))
    out = render(scene, scene.camera)
"""

from .camera import Camera, dolly_path, handheld_shake, orbit_path, pan_path, truck_path
from .render import RenderOutput, render
from .scene import COLORS, ROOMS, SHAPES, Primitive, Room, Scene, random_scene
from .texture import TEXTURE_KINDS, SolidTexture, random_texture

__all__ = ["COLORS", "ROOMS", "SHAPES", "TEXTURE_KINDS", "Camera", "Primitive", "RenderOutput", "Room", "Scene",
           "SolidTexture", "dolly_path", "handheld_shake", "orbit_path", "pan_path", "random_scene", "random_texture",
           "render", "truck_path"]
