"""The scenes of the 3D Layout embedded model's world: its 64×64 camera, the floor area objects stand on, random
objects and layouts, and the near-bright box depth the model is conditioned on.

Shared because two capabilities condition that model on the same scenes: 3D Layout (its training data and
editor) and Unlearning (its text-conditioned teacher draws one-box conditions here).
"""

from __future__ import annotations

import numpy as np

from .camera import Camera
from .render import render
from .scene import COLORS, ROOMS, SHAPE_ASPECT, SHAPES, Primitive, Scene

IMAGE_SIZE = 64
CAMERA = Camera(IMAGE_SIZE, IMAGE_SIZE, fov_deg=50.0, position=(0.0, -2.6, 1.55), look_at=(0.0, 1.0, 0.3))
FLOOR_X = (-1.25, 1.25)
FLOOR_Y = (0.2, 2.0)
SIZE_RANGE = (0.55, 1.0)


def random_object(rng: np.random.Generator, shape: str | None = None, color: str | None = None) -> Primitive:
    """An object of the training data's distribution (size, spot and yaw at random); ``shape`` / ``color`` fix
    those (drawn in the same order either way, so a fixed one leaves the rest of the stream unchanged)."""
    s_pick = SHAPES[rng.integers(len(SHAPES))]
    shape = shape or s_pick
    s = rng.uniform(*SIZE_RANGE)
    a = SHAPE_ASPECT[shape]
    size = (s * a[0], s * a[1], s * a[2])
    center = (rng.uniform(*FLOOR_X), rng.uniform(*FLOOR_Y), size[2] / 2)
    c_pick = list(COLORS)[rng.integers(len(COLORS))]
    return Primitive(shape, color or c_pick, center, size, float(rng.uniform(0, 90)))


def random_layout_scene(rng: np.random.Generator, n_objects: int) -> Scene:
    """A random room with up to ``n_objects`` objects whose footprints do not touch."""
    placed: list[Primitive] = []
    for _ in range(400):
        if len(placed) == n_objects:
            break
        cand = random_object(rng)
        if all(np.hypot(cand.center[0] - o.center[0], cand.center[1] - o.center[1])
               > cand.footprint_radius() + o.footprint_radius() + 0.05 for o in placed):
            placed.append(cand)
    return Scene(ROOMS[rng.integers(len(ROOMS))], tuple(placed), CAMERA)


def box_depth(scene: Scene, camera: Camera | None = None) -> np.ndarray:
    """Near-bright depth of the room plus every object's 3D box."""
    return render(scene, camera, as_boxes=True, shadows=False).near_bright_depth()
