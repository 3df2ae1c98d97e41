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
from backends.synth.boxdepth import layout_depth, near_bright
from backends.synth.layout_scenes import CAMERA
from backends.synth.render import WALL_Y
from backends.synth.scene import ROOMS, Primitive

MAX_BOXES = 5
ROOM_X = (-2.0, 2.0)
ROOM_Y = (-0.6, WALL_Y)
MAX_HEIGHT = 2.5
MIN_SIZE, MAX_SIZE = 0.1, 2.0
MAX_PROMPT = 200
NEW_BOX_SIZE = (0.7, 0.7, 0.7)  # what Add box places (the editor's default box)
FREE_GAP = 0.1  # metres kept between a new box's footprint and the others'
OCCLUSION_COST = 5.0  # a new box hiding all of one other box in the picture weighs as 5 m farther from the middle
ROOMY_GAP = 0.5  # up to this gap, more room around a new box is worth twice its distance from the middle


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


def footprint(box: Box) -> tuple[float, float, float, float]:
    """The box's floor footprint as an axis-aligned rectangle (x0, y0, x1, y1) around its turned corners."""
    c = box.corners()
    return float(c[:, 0].min()), float(c[:, 1].min()), float(c[:, 0].max()), float(c[:, 1].max())


def free_floor_spot(layout: Layout, size: tuple[float, float, float] = NEW_BOX_SIZE, step: float = 0.05,
                    gap: float = FREE_GAP) -> tuple[float, float]:
    """Where a new box of ``size`` (unturned) stands clear of the others: (x, y) of its centre on the floor.

    Candidates lie on a grid over the room's floor, kept where the whole box is inside the room and
    in the camera's view (a box placed out of view would be generated unseen). Of those whose
    footprint keeps ``gap`` from every existing footprint, the best hides least of the others in the
    picture (screen-box overlap, as a share of the new box's), then has room around it (up to
    ``ROOMY_GAP``: boxes that nearly touch are harder to keep apart stage by stage) and stands near
    the middle of the floor the model was trained on; when none is clear, the one that overlaps
    least on the floor (largest signed clearance). Deterministic.
    """
    from backends.synth.layout_scenes import FLOOR_X, FLOOR_Y

    hw, hd = size[0] / 2, size[1] / 2
    cx, cy = (c.ravel() for c in np.meshgrid(_centres(ROOM_X, hw, step), _centres(ROOM_Y, hd, step)))
    screen = _screen_boxes(layout.camera, cx, cy, size)
    cam = layout.camera
    seen = (screen[:, 0] >= 0) & (screen[:, 1] >= 0) & (screen[:, 2] <= cam.width) & (screen[:, 3] <= cam.height)
    if seen.any():
        cx, cy, screen = cx[seen], cy[seen], screen[seen]
    clearance = np.full(cx.shape, np.inf)
    hidden = np.zeros(cx.shape)
    area = np.maximum((screen[:, 2] - screen[:, 0]) * (screen[:, 3] - screen[:, 1]), 1e-9)
    for b in layout.boxes:
        x0, y0, x1, y1 = footprint(b)
        # signed distance between the rectangles: positive apart, negative overlapping
        dx = np.maximum(x0 - (cx + hw), (cx - hw) - x1)
        dy = np.maximum(y0 - (cy + hd), (cy - hd) - y1)
        apart = np.hypot(np.maximum(dx, 0), np.maximum(dy, 0))
        clearance = np.minimum(clearance, np.where((dx > 0) | (dy > 0), apart, np.maximum(dx, dy)))
        uv = cam.project(b.corners())
        ow = np.clip(np.minimum(screen[:, 2], uv[:, 0].max()) - np.maximum(screen[:, 0], uv[:, 0].min()), 0, None)
        oh = np.clip(np.minimum(screen[:, 3], uv[:, 1].max()) - np.maximum(screen[:, 1], uv[:, 1].min()), 0, None)
        hidden += ow * oh / area
    dist = np.hypot(cx - (FLOOR_X[0] + FLOOR_X[1]) / 2, cy - (FLOOR_Y[0] + FLOOR_Y[1]) / 2)
    clear = clearance >= gap
    if clear.any():
        roomy = np.minimum(clearance, ROOMY_GAP)
        i = int(np.argmin(np.where(clear, OCCLUSION_COST * hidden + dist - 2 * roomy, np.inf)))
    else:
        i = int(np.argmax(clearance - 1e-6 * dist))
    return round(float(cx[i]), 3), round(float(cy[i]), 3)


def _centres(span: tuple[float, float], half: float, step: float) -> np.ndarray:
    """Centres along one floor axis where a footprint of half-width ``half`` stays inside ``span``."""
    lo, hi = span[0] + half, span[1] - half
    if lo > hi:  # wider than the span: the middle
        return np.array([(span[0] + span[1]) / 2])
    return np.linspace(lo, hi, int(round((hi - lo) / step)) + 1)


def _screen_boxes(camera: Camera, cx: np.ndarray, cy: np.ndarray, size: tuple[float, float, float]) -> np.ndarray:
    """N×4 image-space boxes (u0, v0, u1, v1) of an unturned box standing at each (cx, cy); a box reaching
    behind the camera gets an infinite one (never in view)."""
    w, d, h = size
    offsets = np.array([(sx * w / 2, sy * d / 2, z) for sx in (-1, 1) for sy in (-1, 1) for z in (0.0, h)])
    points = np.stack([cx, cy, np.zeros_like(cx)], -1)[:, None, :] + offsets[None]
    uvz = camera.project(points.reshape(-1, 3)).reshape(len(cx), 8, 3)
    out = np.concatenate([uvz[..., :2].min(1), uvz[..., :2].max(1)], 1)
    out[(uvz[..., 2] <= 0).any(1)] = (-np.inf, -np.inf, np.inf, np.inf)
    return out


def add_box(layout: Layout, prompt: str, size: tuple[float, float, float] = NEW_BOX_SIZE) -> Layout:
    """The layout with one more box, standing in free floor space (see ``free_floor_spot``)."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError("Type what goes in the new box (e.g. 'a red cube') before adding it.")
    if len(layout.boxes) >= MAX_BOXES:
        raise InputError(f"At most {MAX_BOXES} boxes per layout; delete one first.")
    x, y = free_floor_spot(layout, size)
    new = Layout(layout.scene_prompt, (*layout.boxes, box_on_floor(prompt.strip()[:MAX_PROMPT], x, y, size)),
                 layout.camera)
    new.validate()
    return new


def preview_depth(layout: Layout, size: int = 256) -> np.ndarray:
    """Near-bright box depth as an 8-bit image (what the model is conditioned on), at ``size``² — cheap,
    no model involved, so the editor can show it live."""
    return (layout.with_size(size).depth() * 255 + 0.5).astype(np.uint8)
