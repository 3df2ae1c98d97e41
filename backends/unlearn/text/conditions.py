"""The box depth every text condition carries: one object's box on the floor, as the model's one-object prompts
were trained ("a red cube" over a scene with that one box), at a random spot, size and yaw of the training
distribution (``backends.synth.layout_scenes``). The box keeps the proportions of the prompt's shape; the prompt
with the forgotten word replaced by the safe word keeps the same box (SFD's target), so only the word changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from backends.synth import Scene, render
from backends.synth.detector import bbox
from backends.synth.layout_scenes import CAMERA, box_depth, random_object
from backends.synth.scene import ROOMS

from .words import prompt_class


@dataclass
class Boxes:
    """N one-object scenes: their near-bright box depth (N×64×64), the box's image bounding box (what the
    detector crops) and the scenes themselves (to render the real object for the reference)."""

    depth: np.ndarray
    boxes: list[tuple[int, int, int, int]]
    scenes: list[Scene]


def one_box_scene(rng: np.random.Generator, prompt: str) -> Scene:
    colour, shape = prompt_class(prompt)
    for _ in range(50):  # an object whose box the camera sees whole (the editor's boxes stay in view)
        obj = random_object(rng, shape=shape, color=colour)
        uv = CAMERA.project(obj.corners())
        if (uv[:, 2] > 0).all() and (uv[:, 0] >= 0).all() and (uv[:, 0] <= CAMERA.width).all() \
                and (uv[:, 1] >= 0).all() and (uv[:, 1] <= CAMERA.height).all():
            break
    return Scene(ROOMS[rng.integers(len(ROOMS))], (obj,), CAMERA)


def boxes_for(prompts: list[str], seed: int) -> Boxes:
    """One scene per prompt (same seed → same scenes)."""
    rng = np.random.default_rng(seed)
    scenes = [one_box_scene(rng, p) for p in prompts]
    depth = np.stack([box_depth(s) for s in scenes]).astype(np.float32)
    boxes = [bbox(render(s, as_boxes=True, shadows=False, room=False).mask(0)) for s in scenes]
    return Boxes(depth, [b if b is not None else (0, 0, CAMERA.height, CAMERA.width) for b in boxes], scenes)


def renders(scenes: list[Scene]) -> np.ndarray:
    """The real objects in their scenes (N×64×64×3 uint8), rendered as the model's training data was."""
    return np.stack([render(s, supersample=2).rgb for s in scenes])
