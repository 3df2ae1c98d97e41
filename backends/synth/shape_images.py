"""32×32 primitive-world images whose class is the shape of the one object in them.

Colour, size, position, yaw and the room vary at random, so a classifier must look at the shape —
a counterfactual has to change the object's shape, not its colour or the room, and a label-conditional
diffusion model (Unlearning) learns one distribution per shape. Shared here because the Counterfactual
classifier and the Unlearning teacher are trained and measured on the same renders.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from backends.synth import SHAPES, Camera, Scene, render
from backends.synth.scene import COLORS, ROOMS, SHAPE_ASPECT, Primitive

CLASSES: tuple[str, ...] = SHAPES
IMAGE_SIZE = 32
CAMERA = Camera(IMAGE_SIZE, IMAGE_SIZE, fov_deg=42.0, position=(0.0, -2.1, 1.25), look_at=(0.0, 1.0, 0.38))


@dataclass
class Example:
    image: np.ndarray  # 32×32×3 uint8
    label: int  # index into CLASSES
    object_mask: np.ndarray  # 32×32 bool: visible pixels of the object
    box_mask: np.ndarray  # 32×32 bool: pixels of the object's 3D box (a natural editing region)
    scene: Scene


def example_scene(seed: int, shape: str | None = None) -> Scene:
    rng = np.random.default_rng(seed)
    shape = shape or CLASSES[rng.integers(len(CLASSES))]
    s = rng.uniform(0.75, 1.05)
    aspect = SHAPE_ASPECT[shape]
    size = (s * aspect[0], s * aspect[1], s * aspect[2])
    center = (rng.uniform(-0.35, 0.35), rng.uniform(0.7, 1.3), size[2] / 2)
    obj = Primitive(shape, list(COLORS)[rng.integers(len(COLORS))], center, size, float(rng.uniform(0, 90)))
    return Scene(ROOMS[rng.integers(len(ROOMS))], (obj,), CAMERA)


def make_example(seed: int, shape: str | None = None) -> Example:
    scene = example_scene(seed, shape)
    out = render(scene, supersample=4)
    box = render(scene, as_boxes=True, room=False)
    return Example(out.rgb, CLASSES.index(scene.objects[0].shape), out.mask(0), box.mask(0), scene)


def make_arrays(seeds: range | list[int]) -> dict[str, np.ndarray]:
    """Stacked images (N×32×32×3 uint8), labels, object and box masks for the given seeds."""
    exs = [make_example(s) for s in seeds]
    return {
        "images": np.stack([e.image for e in exs]),
        "labels": np.array([e.label for e in exs], dtype=np.int64),
        "object_masks": np.stack([e.object_mask for e in exs]),
        "box_masks": np.stack([e.box_mask for e in exs]),
    }


# Disjoint seed ranges: training never sees validation or test scenes.
SPLITS = {"train": range(0, 30_000), "val": range(1_000_000, 1_002_000), "test": range(2_000_000, 2_002_000)}


def cached_split(split: str, cache_dir, limit: int | None = None, workers: int = 2) -> dict[str, np.ndarray]:
    """A split rendered once and kept as ``<cache_dir>/counterfactual_<split>_<n>.npz`` (for training and benches;
    the name predates the move here and is kept so existing caches still hit)."""
    from pathlib import Path

    from backends.common.datacache import cached_arrays

    seeds = SPLITS[split] if limit is None else SPLITS[split][:limit]
    return cached_arrays(Path(cache_dir) / f"counterfactual_{split}_{len(seeds)}.npz", seeds, make_arrays, workers)


def ood_inputs(seed0: int, n: int = 1000) -> tuple[list[np.ndarray], None]:
    """``n`` held-out examples from seed ``seed0`` on, as the classifier sees them (32×32), for the out-of-domain
    statistics (``training/ood_calibration.py``); no masks. The default ``n`` is the fit split's."""
    return [make_example(seed0 + i).image for i in range(n)], None
