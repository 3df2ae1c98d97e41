"""The embedded domain of the 3D Layout tab: 64×64 primitive-world scenes with their box depth.

Like LooseControl, the model is conditioned on the depth of the objects' *boxes* (a loose proxy)
while the image shows the real primitive inside each box. Prompts are of the three kinds the
stages use: a scene alone ("a green lawn under a pale blue sky", the empty-scene stage), one
object ("a red cube", an insertion stage; other objects may already stand in the scene), and the
whole layout ("a red cube, a blue sphere in ...", the one-shot baseline; objects in random order,
as a caption would name them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from backends.synth import Scene, render
from backends.synth.layout_scenes import (  # noqa: F401 (the world's scenes, shared with Unlearning)
    CAMERA,
    FLOOR_X,
    FLOOR_Y,
    IMAGE_SIZE,
    SIZE_RANGE,
    box_depth,
    random_layout_scene,
    random_object,
)

PROMPT_KINDS = ("scene", "object", "layout")
PROMPT_KIND_P = (0.2, 0.45, 0.35)


@dataclass
class Sample:
    image: np.ndarray  # H×W×3 uint8
    depth: np.ndarray  # H×W float32 in [0, 1], near = bright, boxes + room
    prompt: str
    kind: str


def sample_scene(seed: int) -> tuple[Scene, str, np.random.Generator]:
    """The scene of sample ``seed``, its prompt kind, and the random stream that goes on to pick the prompt."""
    rng = np.random.default_rng(seed)
    kind = PROMPT_KINDS[rng.choice(len(PROMPT_KINDS), p=PROMPT_KIND_P)]
    n = 0 if kind == "scene" else int(rng.integers(1, 4))
    return random_layout_scene(rng, n), kind, rng


def layout_prompt(scene: Scene, rng: np.random.Generator) -> str:
    """The whole layout's caption, objects in random order ("a red cube, a blue sphere in …")."""
    order = rng.permutation(len(scene.objects))
    return ", ".join(scene.objects[i].prompt for i in order) + " in " + scene.room.prompt


def make_sample(seed: int) -> Sample:
    scene, kind, rng = sample_scene(seed)
    if kind == "scene":
        prompt = scene.room.prompt
    elif kind == "object":
        prompt = scene.objects[rng.integers(len(scene.objects))].prompt
    else:
        prompt = layout_prompt(scene, rng)
    image = render(scene, supersample=2).rgb
    return Sample(image, box_depth(scene), prompt, kind)


def make_arrays(seeds) -> dict[str, np.ndarray]:
    return _arrays([make_sample(s) for s in seeds])


def screen_overlap(scene: Scene) -> float:
    """The largest fraction of one object's screen rectangle (its projected 3D box) that another's covers —
    a cheap stand-in for mask overlap when drawing occluded layouts."""
    rects = []
    for o in scene.objects:
        uv = scene.camera.project(o.corners())[:, :2]
        rects.append((uv.min(0), uv.max(0)))
    best = 0.0
    for i, (lo_a, hi_a) in enumerate(rects):
        for j, (lo_b, hi_b) in enumerate(rects):
            if i != j:
                inter = np.clip(np.minimum(hi_a, hi_b) - np.maximum(lo_a, lo_b), 0, None).prod()
                best = max(best, float(inter / max((hi_b - lo_b).prod(), 1e-6)))
    return best


CROWDED_OBJECTS = 3
CROWDED_MIN_RECT_OVERLAP = 0.35


def crowded_scene(rng: np.random.Generator, tries: int = 200) -> Scene:
    """Three objects placed as ``random_layout_scene`` places them, drawn again until one's screen
    rectangle covers ≥ 35% of another's: the occluded layouts where one-shot generation fails."""
    scene = random_layout_scene(rng, CROWDED_OBJECTS)
    for _ in range(tries):
        if len(scene.objects) == CROWDED_OBJECTS and screen_overlap(scene) >= CROWDED_MIN_RECT_OVERLAP:
            break
        scene = random_layout_scene(rng, CROWDED_OBJECTS)
    return scene


def make_crowded_sample(seed: int) -> Sample:
    """A crowded scene with one object's prompt (an insertion stage; 60%) or the whole layout's."""
    rng = np.random.default_rng(seed)
    scene = crowded_scene(rng)
    if rng.random() < 0.6:
        kind, prompt = "object", scene.objects[rng.integers(len(scene.objects))].prompt
    else:
        kind, prompt = "layout", layout_prompt(scene, rng)
    return Sample(render(scene, supersample=2).rgb, box_depth(scene), prompt, kind)


def _arrays(samples: list[Sample]) -> dict[str, np.ndarray]:
    return {
        "images": np.stack([s.image for s in samples]),
        "depths": np.stack([s.depth for s in samples]).astype(np.float16),
        "prompts": np.array([s.prompt for s in samples]),
        "kinds": np.array([s.kind for s in samples]),
    }


def make_crowded_arrays(seeds) -> dict[str, np.ndarray]:
    return _arrays([make_crowded_sample(s) for s in seeds])


SPLITS = {"train": range(0, 24_000), "val": range(1_000_000, 1_001_000), "crowded": range(2_000_000, 2_008_000)}


def cached_split(split: str, cache_dir, limit: int | None = None, workers: int = 2) -> dict[str, np.ndarray]:
    """A split rendered once and kept as ``<cache_dir>/layout3d_<split>_<n>.npz``."""
    from pathlib import Path

    from backends.common.datacache import cached_arrays

    seeds = SPLITS[split] if limit is None else SPLITS[split][:limit]
    maker = make_crowded_arrays if split == "crowded" else make_arrays
    return cached_arrays(Path(cache_dir) / f"layout3d_{split}_{len(seeds)}.npz", seeds, maker, workers)
