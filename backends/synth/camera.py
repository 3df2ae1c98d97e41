"""Pinhole cameras and camera paths. World frame: z up, floor at z = 0, the back wall at +y."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Camera:
    width: int = 64
    height: int = 64
    fov_deg: float = 50.0  # vertical field of view
    position: tuple[float, float, float] = (0.0, -3.2, 1.7)
    look_at: tuple[float, float, float] = (0.0, 1.0, 0.35)
    up: tuple[float, float, float] = (0.0, 0.0, 1.0)

    def __post_init__(self):
        if not (8 <= self.width <= 4096 and 8 <= self.height <= 4096):
            raise ValueError(f"camera size {self.width}×{self.height} is outside 8..4096")
        if not 5.0 <= self.fov_deg <= 150.0:
            raise ValueError(f"field of view {self.fov_deg}° is outside 5..150")

    @property
    def focal(self) -> float:
        return 0.5 * self.height / np.tan(np.radians(self.fov_deg) / 2)

    @property
    def intrinsics(self) -> np.ndarray:
        """3×3 K (pixel centres at +0.5)."""
        f = self.focal
        return np.array([[f, 0, self.width / 2], [0, f, self.height / 2], [0, 0, 1]], dtype=np.float64)

    @property
    def rotation(self) -> np.ndarray:
        """Rows are the camera's right, down and forward axes in world coordinates (OpenCV convention)."""
        forward = np.subtract(self.look_at, self.position).astype(np.float64)
        forward /= np.linalg.norm(forward)
        right = np.cross(forward, self.up)
        if np.linalg.norm(right) < 1e-8:
            raise ValueError("camera looks straight along its up vector")
        right /= np.linalg.norm(right)
        down = np.cross(forward, right)
        return np.stack([right, down, forward])

    @property
    def extrinsics(self) -> np.ndarray:
        """4×4 world → camera."""
        r = self.rotation
        e = np.eye(4)
        e[:3, :3] = r
        e[:3, 3] = -r @ np.asarray(self.position, dtype=np.float64)
        return e

    def rays(self) -> np.ndarray:
        """H×W×6 rays (origin, direction); each direction has forward component 1, so t = z-depth."""
        u, v = np.meshgrid(np.arange(self.width) + 0.5, np.arange(self.height) + 0.5)
        cam = np.stack([(u - self.width / 2) / self.focal, (v - self.height / 2) / self.focal, np.ones_like(u)], -1)
        dirs = cam @ self.rotation  # camera → world (rotation is orthonormal)
        origins = np.broadcast_to(np.asarray(self.position, dtype=np.float64), dirs.shape)
        return np.concatenate([origins, dirs], -1).astype(np.float32)

    def project(self, points: np.ndarray) -> np.ndarray:
        """N×3 world points → N×3 (u, v, z-depth) in pixels."""
        cam = (np.asarray(points, dtype=np.float64) - np.asarray(self.position)) @ self.rotation.T
        z = cam[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            uv = cam[:, :2] / z[:, None] * self.focal + np.array([self.width / 2, self.height / 2])
        return np.concatenate([uv, z[:, None]], 1)

    def with_size(self, width: int, height: int) -> Camera:
        return Camera(width, height, self.fov_deg, self.position, self.look_at, self.up)


def orbit_path(camera: Camera, n_frames: int, arc_deg: float = 60.0, bob: float = 0.0) -> list[Camera]:
    """Cameras swinging ``arc_deg`` around the look-at point at constant distance (for video)."""
    if n_frames < 1:
        raise ValueError("a camera path needs at least one frame")
    target = np.asarray(camera.look_at, dtype=np.float64)
    offset = np.asarray(camera.position, dtype=np.float64) - target
    radius = np.hypot(offset[0], offset[1])
    start = np.arctan2(offset[1], offset[0])
    cams = []
    for i in range(n_frames):
        t = i / max(1, n_frames - 1)
        angle = start + np.radians(arc_deg) * (t - 0.5)
        z = offset[2] + bob * np.sin(2 * np.pi * t)
        pos = target + np.array([radius * np.cos(angle), radius * np.sin(angle), z])
        cams.append(Camera(camera.width, camera.height, camera.fov_deg, tuple(pos), camera.look_at, camera.up))
    return cams


def dolly_path(camera: Camera, n_frames: int, distance: float = 1.0) -> list[Camera]:
    """Cameras moving ``distance`` along the viewing direction (negative: backwards), target moving along."""
    _check_frames(n_frames)
    forward = np.subtract(camera.look_at, camera.position).astype(np.float64)
    forward /= np.linalg.norm(forward)
    return [_shifted(camera, forward * distance * (i / max(1, n_frames - 1) - 0.5)) for i in range(n_frames)]


def truck_path(camera: Camera, n_frames: int, distance: float = 1.0) -> list[Camera]:
    """Cameras sliding ``distance`` sideways (along the camera's right axis), looking the same way."""
    _check_frames(n_frames)
    right = camera.rotation[0]
    return [_shifted(camera, right * distance * (i / max(1, n_frames - 1) - 0.5)) for i in range(n_frames)]


def pan_path(camera: Camera, n_frames: int, arc_deg: float = 30.0) -> list[Camera]:
    """A camera standing still and turning ``arc_deg`` about the vertical axis."""
    _check_frames(n_frames)
    pos = np.asarray(camera.position, dtype=np.float64)
    offset = np.asarray(camera.look_at, dtype=np.float64) - pos
    cams = []
    for i in range(n_frames):
        a = np.radians(arc_deg) * (i / max(1, n_frames - 1) - 0.5)
        c, s = np.cos(a), np.sin(a)
        rotated = np.array([c * offset[0] - s * offset[1], s * offset[0] + c * offset[1], offset[2]])
        cams.append(Camera(camera.width, camera.height, camera.fov_deg, camera.position, tuple(pos + rotated), camera.up))
    return cams


def handheld_shake(cams: list[Camera], rng: np.random.Generator, amplitude: float = 0.03,
                   smoothness: float = 0.7) -> list[Camera]:
    """The same path with a smooth random jitter of position and aim (a hand-held camera)."""
    jitter = np.zeros((len(cams), 2, 3))
    state = np.zeros((2, 3))
    for i in range(len(cams)):
        state = smoothness * state + (1 - smoothness) * rng.normal(size=(2, 3)) * amplitude * 3
        jitter[i] = state
    return [Camera(c.width, c.height, c.fov_deg, tuple(np.add(c.position, j[0])), tuple(np.add(c.look_at, j[1])), c.up)
            for c, j in zip(cams, jitter, strict=True)]


def _shifted(camera: Camera, delta: np.ndarray) -> Camera:
    return Camera(camera.width, camera.height, camera.fov_deg, tuple(np.add(camera.position, delta)),
                  tuple(np.add(camera.look_at, delta)), camera.up)


def _check_frames(n_frames: int) -> None:
    if n_frames < 1:
        raise ValueError("a camera path needs at least one frame")
