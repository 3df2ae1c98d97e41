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
