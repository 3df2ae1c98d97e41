"""Scenes of the primitive world: a room (floor + back wall) and primitives standing in 3D boxes.

Everything is plain data (JSON-serialisable) and deterministic given a seed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from .camera import Camera

SHAPES: tuple[str, ...] = ("cube", "sphere", "cylinder", "cone", "torus")

COLORS: dict[str, tuple[float, float, float]] = {
    "red": (0.85, 0.12, 0.10),
    "orange": (0.95, 0.50, 0.08),
    "yellow": (0.95, 0.85, 0.12),
    "green": (0.15, 0.70, 0.20),
    "cyan": (0.10, 0.75, 0.85),
    "blue": (0.12, 0.25, 0.90),
    "purple": (0.55, 0.15, 0.75),
    "pink": (0.95, 0.45, 0.70),
}

# Natural proportions (width, depth, height) of each shape inside a box of size s.
SHAPE_ASPECT: dict[str, tuple[float, float, float]] = {
    "cube": (1.0, 1.0, 1.0),
    "sphere": (1.0, 1.0, 1.0),
    "cylinder": (0.8, 0.8, 1.1),
    "cone": (0.9, 0.9, 1.2),
    "torus": (1.1, 1.1, 0.35),
}


@dataclass(frozen=True)
class Room:
    name: str
    floor: tuple[float, float, float]
    wall: tuple[float, float, float]

    @property
    def prompt(self) -> str:
        return self.name


ROOMS: tuple[Room, ...] = (
    Room("a room with a wooden floor and a beige wall", (0.55, 0.38, 0.22), (0.86, 0.80, 0.68)),
    Room("a room with a grey concrete floor and a white wall", (0.50, 0.50, 0.50), (0.92, 0.92, 0.92)),
    Room("a green lawn under a pale blue sky", (0.30, 0.55, 0.22), (0.62, 0.78, 0.95)),
    Room("a sandy desert under a hazy sky", (0.85, 0.72, 0.48), (0.90, 0.86, 0.78)),
    Room("a dark studio with a black floor", (0.12, 0.12, 0.13), (0.25, 0.25, 0.28)),
    Room("a room with a red carpet and a cream wall", (0.55, 0.12, 0.14), (0.93, 0.89, 0.78)),
)


@dataclass(frozen=True)
class Primitive:
    """A shape filling its 3D box: centre (x, y, z), size (width x, depth y, height z), yaw about z."""

    shape: str
    color: str
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    yaw_deg: float = 0.0

    def __post_init__(self):
        if self.shape not in SHAPES:
            raise ValueError(f"unknown shape {self.shape!r}; known: {', '.join(SHAPES)}")
        if self.color not in COLORS:
            raise ValueError(f"unknown colour {self.color!r}; known: {', '.join(COLORS)}")
        if min(self.size) <= 0:
            raise ValueError(f"box size must be positive, got {self.size}")

    @property
    def prompt(self) -> str:
        return f"{'an' if self.color[0] in 'aeiou' else 'a'} {self.color} {self.shape}"

    @property
    def rgb(self) -> tuple[float, float, float]:
        return COLORS[self.color]

    def footprint_radius(self) -> float:
        return 0.5 * float(np.hypot(self.size[0], self.size[1]))

    def corners(self) -> np.ndarray:
        """8×3 world corners of the (yawed) box."""
        sx, sy, sz = (0.5 * s for s in self.size)
        local = np.array([[x, y, z] for x in (-sx, sx) for y in (-sy, sy) for z in (-sz, sz)])
        return local @ yaw_matrix(self.yaw_deg).T + np.asarray(self.center)


def yaw_matrix(yaw_deg: float) -> np.ndarray:
    c, s = np.cos(np.radians(yaw_deg)), np.sin(np.radians(yaw_deg))
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@dataclass(frozen=True)
class Scene:
    room: Room = ROOMS[0]
    objects: tuple[Primitive, ...] = ()
    camera: Camera = field(default_factory=Camera)

    @property
    def prompt(self) -> str:
        """``"a red cube, a blue sphere in a room with ..."``; the room alone when empty."""
        if not self.objects:
            return self.room.prompt
        return ", ".join(o.prompt for o in self.objects) + " in " + self.room.prompt

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Scene:
        return cls(
            room=Room(data["room"]["name"], tuple(data["room"]["floor"]), tuple(data["room"]["wall"])),
            objects=tuple(Primitive(o["shape"], o["color"], tuple(o["center"]), tuple(o["size"]), o.get("yaw_deg", 0.0))
                          for o in data.get("objects", ())),
            camera=Camera(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.get("camera", {}).items()}),
        )


FLOOR_AREA = ((-1.6, 1.6), (0.2, 2.6))  # x range, y range where objects may stand


def random_primitive(rng: np.random.Generator, shape: str | None = None, color: str | None = None,
                     size_range: tuple[float, float] = (0.45, 0.9)) -> Primitive:
    shape = shape or SHAPES[rng.integers(len(SHAPES))]
    color = color or list(COLORS)[rng.integers(len(COLORS))]
    s = rng.uniform(*size_range)
    aspect = SHAPE_ASPECT[shape]
    size = (s * aspect[0], s * aspect[1], s * aspect[2])
    x = rng.uniform(*FLOOR_AREA[0])
    y = rng.uniform(*FLOOR_AREA[1])
    return Primitive(shape, color, (x, y, size[2] / 2), size, float(rng.uniform(0, 90)))


def random_scene(rng: np.random.Generator, n_objects: int | tuple[int, int] = (1, 5), camera: Camera | None = None,
                 room: Room | None = None, max_tries: int = 200) -> Scene:
    """Objects placed on the floor without overlapping footprints (ValueError if they cannot fit)."""
    n = n_objects if isinstance(n_objects, int) else int(rng.integers(n_objects[0], n_objects[1] + 1))
    placed: list[Primitive] = []
    tries = 0
    while len(placed) < n:
        tries += 1
        if tries > max_tries:
            raise ValueError(f"could not place {n} objects without overlap")
        cand = random_primitive(rng)
        if all(_apart(cand, o) for o in placed):
            placed.append(cand)
    room = room or ROOMS[rng.integers(len(ROOMS))]
    return Scene(room, tuple(placed), camera or Camera())


def _apart(a: Primitive, b: Primitive, margin: float = 0.05) -> bool:
    d = np.hypot(a.center[0] - b.center[0], a.center[1] - b.center[1])
    return d > a.footprint_radius() + b.footprint_radius() + margin
