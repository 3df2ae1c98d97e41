"""Procedural solid textures for primitive-world surfaces (noise, stripes, checkers, gradients).

A texture is a function of a surface point's 3D coordinates in the surface's own frame (an object's
box frame, so the pattern moves with the object; the world frame for floor and wall): no UV maps,
and every shape gets a seamless pattern. Colour then no longer tells depth, which is what video
depth training needs: the model must read geometry (edges, perspective of the pattern, motion).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TEXTURE_KINDS: tuple[str, ...] = ("plain", "stripes", "checkers", "noise", "gradient")


@dataclass(frozen=True)
class SolidTexture:
    """``kind`` pattern with ``period`` (scene units) between the base colour and ``color2``.

    ``axis`` orients stripes and gradients; ``contrast`` in [0, 1] blends towards ``color2``.
    """

    kind: str = "plain"
    period: float = 0.3
    color2: tuple[float, float, float] = (1.0, 1.0, 1.0)
    axis: tuple[float, float, float] = (1.0, 0.0, 0.0)
    contrast: float = 0.6
    seed: int = 0

    def __post_init__(self):
        if self.kind not in TEXTURE_KINDS:
            raise ValueError(f"unknown texture {self.kind!r}; known: {', '.join(TEXTURE_KINDS)}")
        if self.period <= 0:
            raise ValueError(f"texture period must be positive, got {self.period}")

    def weight(self, points: np.ndarray) -> np.ndarray:
        """N×3 local points → N blend weights in [0, 1] (0 = base colour, 1 = ``color2``)."""
        p = np.asarray(points, dtype=np.float64) / self.period
        axis = np.asarray(self.axis, dtype=np.float64)
        axis = axis / (np.linalg.norm(axis) or 1.0)
        if self.kind == "plain":
            return np.zeros(len(p))
        if self.kind == "stripes":
            return (np.floor(p @ axis) % 2).astype(np.float64)
        if self.kind == "checkers":
            return (np.floor(p).sum(1) % 2).astype(np.float64)
        if self.kind == "gradient":
            return 0.5 + 0.5 * np.sin(np.pi * (p @ axis) / 2)
        return value_noise(p, self.seed)

    def shade(self, points: np.ndarray, base: np.ndarray) -> np.ndarray:
        """N×3 local points, base colour (3 or N×3) → N×3 albedo."""
        w = self.contrast * self.weight(points)[:, None]
        return (1 - w) * np.asarray(base, dtype=np.float64) + w * np.asarray(self.color2, dtype=np.float64)


def value_noise(p: np.ndarray, seed: int = 0, octaves: int = 2) -> np.ndarray:
    """Smooth 3D value noise in [0, 1] (trilinear over hashed lattice values, two octaves)."""
    out = np.zeros(len(p))
    total = 0.0
    for o in range(octaves):
        q = p * (2 ** o)
        base = np.floor(q)
        f = q - base
        f = f * f * (3 - 2 * f)
        acc = np.zeros(len(p))
        for corner in range(8):
            d = np.array([(corner >> k) & 1 for k in range(3)])
            w = np.prod(np.where(d, f, 1 - f), axis=1)
            acc += w * _lattice(base + d, seed + 17 * o)
        amp = 0.5 ** o
        out += amp * acc
        total += amp
    return out / total


def _lattice(cells: np.ndarray, seed: int) -> np.ndarray:
    c = cells.astype(np.int64)
    h = (c[:, 0] * 73856093) ^ (c[:, 1] * 19349663) ^ (c[:, 2] * 83492791) ^ (seed * 2654435761)
    h = (h ^ (h >> 13)) * 1274126177
    return ((h ^ (h >> 16)) & 0xFFFF) / 65535.0


def random_texture(rng: np.random.Generator, plain_p: float = 0.15) -> SolidTexture:
    """A random pattern, period and second colour (``plain_p`` of them untextured)."""
    if rng.random() < plain_p:
        return SolidTexture()
    kind = TEXTURE_KINDS[1 + rng.integers(len(TEXTURE_KINDS) - 1)]
    axis = rng.normal(size=3)
    return SolidTexture(kind=kind, period=float(rng.uniform(0.08, 0.6)), color2=tuple(rng.uniform(0, 1, 3).tolist()),
                        axis=tuple(axis.tolist()), contrast=float(rng.uniform(0.3, 0.9)),
                        seed=int(rng.integers(1 << 30)))
