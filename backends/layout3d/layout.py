"""A 3D layout — a scene prompt and up to five prompted boxes in the room — and its renders.

The layout is what the box editor sends (JSON) and what every stage is conditioned on: ray-cast
with open3d (``backends.synth``) into the near-bright box depth, one mask per box (the box alone,
as the reference renders it) and the 3D point behind every pixel of each box.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import cached_property

import numpy as np

from backends.common import jsontext
from backends.common.errors import InputError
from backends.synth import Camera, Scene, render
from backends.synth.render import WALL_Y
from backends.synth.scene import ROOMS, Primitive

from .boxdepth import layout_depth, near_bright
from .data import CAMERA

MAX_BOXES = 5
ROOM_X = (-2.0, 2.0)
ROOM_Y = (-0.6, WALL_Y)
MAX_HEIGHT = 2.5
MIN_SIZE, MAX_SIZE = 0.1, 2.0
MAX_PROMPT = 200


@dataclass(frozen=True)
class Box:
    """An object's 3D box: centre (x, y, z) in metres (z up, floor at 0), size (w, d, h), yaw about z."""

    prompt: str
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    yaw_deg: float = 0.0

    def corners(self) -> np.ndarray:
        return self._as_primitive().corners()

    def _as_primitive(self) -> Primitive:
        # The renderer's box geometry; the shape/colour fields are unused when rendering boxes.
        return Primitive("cube", "red", tuple(self.center), tuple(self.size), float(self.yaw_deg))


@dataclass(frozen=True)
class Layout:
    scene_prompt: str
    boxes: tuple[Box, ...] = ()
    camera: Camera = field(default=CAMERA)

    def with_size(self, size: int) -> Layout:
        return Layout(self.scene_prompt, self.boxes, self.camera.with_size(size, size))

    def to_dict(self) -> dict:
        return {"scene_prompt": self.scene_prompt, "boxes": [asdict(b) for b in self.boxes]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_json(cls, text: str | bytes | dict, camera: Camera = CAMERA) -> Layout:
        """Parse and validate; every problem is an ``InputError`` a person can act on."""
        if isinstance(text, dict):
            data = text
        else:
            try:
                data = jsontext.loads(text)
            except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as e:
                raise InputError(f"The layout is not valid JSON ({e}).") from None
        if not isinstance(data, dict):
            raise InputError("A layout is a JSON object with 'scene_prompt' and 'boxes'.")
        scene = data.get("scene_prompt")
        if not isinstance(scene, str) or not scene.strip():
            raise InputError("The layout needs a non-empty 'scene_prompt' (the empty scene, e.g. a room).")
        raw = data.get("boxes", [])
        if not isinstance(raw, list):
            raise InputError("'boxes' must be a list.")
        if len(raw) > MAX_BOXES:
            raise InputError(f"At most {MAX_BOXES} boxes per layout (got {len(raw)}).")
        boxes = tuple(_parse_box(i, b) for i, b in enumerate(raw))
        layout = cls(scene.strip()[:MAX_PROMPT], boxes, camera)
        layout.validate()
        return layout

    def validate(self) -> None:
        for i, b in enumerate(self.boxes):
            name = f"Box {i + 1} ({b.prompt!r})"
            if any(s < MIN_SIZE or s > MAX_SIZE for s in b.size):
                raise InputError(f"{name}: every side must be between {MIN_SIZE} and {MAX_SIZE} m, got {list(b.size)}.")
            c = b.corners()
            if c[:, 0].min() < ROOM_X[0] or c[:, 0].max() > ROOM_X[1] or c[:, 1].min() < ROOM_Y[0] \
                    or c[:, 1].max() > ROOM_Y[1]:
                raise InputError(f"{name} is outside the room (x in {list(ROOM_X)}, y in {list(ROOM_Y)} m).")
            if c[:, 2].min() < -1e-3 or c[:, 2].max() > MAX_HEIGHT:
                raise InputError(f"{name}: boxes stand on the floor (z ≥ 0) and stay below {MAX_HEIGHT} m.")

    @cached_property
    def _scene(self) -> Scene:
        room = next((r for r in ROOMS if r.prompt == self.scene_prompt), ROOMS[0])
        return Scene(room, tuple(b._as_primitive() for b in self.boxes), self.camera)

    def depth(self) -> np.ndarray:
        """Near-bright depth (H×W float32 in [0, 1]) of the room and all boxes (cached pieces: ``boxdepth``)."""
        return near_bright(self.metric_depth())

    def box_render(self, index: int):
        """The box alone (no room, no other boxes): its mask (bool H×W) and per-pixel 3D points."""
        if not 0 <= index < len(self.boxes):
            raise InputError(f"There is no box {index + 1}; the layout has {len(self.boxes)}.")
        out = render(self._scene, as_boxes=True, shadows=False, room=False, only=(index,))
        return out.mask(index), out.points

    def box_mask(self, index: int) -> np.ndarray:
        return self.box_render(index)[0]

    def metric_depth(self) -> np.ndarray:
        return layout_depth(tuple(b._as_primitive() for b in self.boxes), self.camera)


def _parse_box(i: int, b) -> Box:
    if not isinstance(b, dict):
        raise InputError(f"Box {i + 1} must be an object with prompt, center, size and yaw_deg.")
    prompt = b.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError(f"Box {i + 1} needs a prompt (what goes in the box, e.g. 'a red cube').")
    try:
        center = tuple(float(v) for v in b["center"])
        size = tuple(float(v) for v in b["size"])
        yaw = float(b.get("yaw_deg", 0.0))
    except (KeyError, TypeError, ValueError):
        raise InputError(f"Box {i + 1}: 'center' and 'size' must be three numbers each, 'yaw_deg' a number.") from None
    if len(center) != 3 or len(size) != 3 or not np.all(np.isfinite(center + size + (yaw,))):
        raise InputError(f"Box {i + 1}: 'center' and 'size' must be three finite numbers each.")
    return Box(prompt.strip()[:MAX_PROMPT], center, size, yaw)


def box_on_floor(prompt: str, x: float, y: float, size: tuple[float, float, float], yaw_deg: float = 0.0) -> Box:
    """A box standing on the floor at (x, y)."""
    return Box(prompt, (float(x), float(y), size[2] / 2), tuple(float(s) for s in size), float(yaw_deg))


def preview_depth(layout: Layout, size: int = 256) -> np.ndarray:
    """Near-bright box depth as an 8-bit image (what the model is conditioned on), at ``size``² — cheap,
    no model involved, so the editor can show it live."""
    return (layout.with_size(size).depth() * 255 + 0.5).astype(np.uint8)
