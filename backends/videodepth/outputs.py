"""What a depth run turns into for people and other tools: colour maps, 16-bit PNGs, a ground-truth-free
flicker score, and a point cloud (``.ply`` and the compact form the browser's three.js viewer reads).

Disparity here is the model's relative disparity in [0, 1] (near = 1); its scale and shift are unknown,
so the point cloud assumes a depth range (``NEAR_FAR``) and a field of view, and says so.
"""

from __future__ import annotations

import base64
import io
import json

import numpy as np
from PIL import Image

from backends.common.errors import InputError

COLORMAPS = ("Spectral", "inferno", "magma", "viridis", "turbo", "gray")
NEAR_FAR = (1.0, 5.0)  # depth range assumed for relative disparity when it is shown in 3D
FOV_DEG = 55.0  # horizontal field of view assumed for the point cloud
STATIC_RGB_CHANGE = 6  # a pixel is static between two frames when no channel changes by more (of 255)


def quantize16(disp: np.ndarray) -> np.ndarray:
    """Disparity in [0, 1] → uint16 0…65535 (what the 16-bit PNGs hold)."""
    return np.round(np.clip(disp, 0, 1) * 65535).astype(np.uint16)


def png16_bytes(disp: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(quantize16(disp)).save(buf, format="PNG")
    return buf.getvalue()


def colorize(disp: np.ndarray, cmap: str) -> np.ndarray:
    """H×W disparity in [0, 1] → H×W×3 uint8 through a matplotlib colour map (near = the map's top)."""
    import matplotlib

    if cmap not in COLORMAPS:
        raise InputError(f"Unknown colour map {cmap!r}; choose one of {', '.join(COLORMAPS)}.")
    return (matplotlib.colormaps[cmap](np.clip(disp, 0, 1))[..., :3] * 255).astype(np.uint8)


def flicker_score(disparity: np.ndarray, rgb: np.ndarray) -> float | None:
    """Mean frame-to-frame change of the video's disparity where the picture did not change.

    Needs no ground truth: the stack (F×H×W) is normalised once for the whole video (its 2nd–98th
    percentile → 0…1, so a per-frame scale drift is NOT forgiven), and between consecutive frames only
    pixels whose colour stayed within ``STATIC_RGB_CHANGE`` count — there, depth should not change.
    Lower is steadier. None when fewer than two frames or no static pixels.
    """
    d = np.asarray(disparity, np.float64)
    if len(d) < 2:
        return None
    lo, hi = np.percentile(d, [2, 98])
    d = (d - lo) / max(hi - lo, 1e-6)
    rgb = np.asarray(rgb, np.int16)
    changes = []
    for t in range(len(d) - 1):
        static = np.abs(rgb[t + 1] - rgb[t]).max(-1) <= STATIC_RGB_CHANGE
        if static.any():
            changes.append(np.abs(d[t + 1] - d[t])[static].mean())
    return float(np.mean(changes)) if changes else None


def point_cloud(disp: np.ndarray, rgb: np.ndarray, max_points: int = 65_536) -> tuple[np.ndarray, np.ndarray]:
    """Back-project one frame: (N×3 float32 points, x right / y up / z towards the viewer; N×3 uint8 colours).

    Disparity maps linearly onto 1/depth over ``NEAR_FAR``; a pinhole camera with ``FOV_DEG``.
    Large frames are subsampled on a regular grid to at most ``max_points``.
    """
    h, w = disp.shape
    if rgb.shape[:2] != (h, w):
        raise InputError(f"Colour frame {rgb.shape[1]}×{rgb.shape[0]} does not match depth {w}×{h}.")
    step = max(1, int(np.ceil(np.sqrt(h * w / max_points))))
    near, far = NEAR_FAR
    inv = 1 / far + np.clip(disp[::step, ::step], 0, 1) * (1 / near - 1 / far)
    z = 1.0 / inv
    focal = 0.5 * w / np.tan(np.radians(FOV_DEG) / 2)
    v, u = np.mgrid[0:h:step, 0:w:step].astype(np.float64) + 0.5
    x = (u - w / 2) / focal * z
    y = -(v - h / 2) / focal * z
    xyz = np.stack([x, y, -z], -1).reshape(-1, 3).astype(np.float32)
    return xyz, rgb[::step, ::step].reshape(-1, 3).astype(np.uint8)


def ply_bytes(xyz: np.ndarray, rgb: np.ndarray) -> bytes:
    """A binary little-endian ``.ply`` of coloured points (x y z float, red green blue uchar)."""
    header = (f"ply\nformat binary_little_endian 1.0\ncomment relative depth, assumed range {NEAR_FAR}, fov {FOV_DEG}\n"
              f"element vertex {len(xyz)}\nproperty float x\nproperty float y\nproperty float z\n"
              "property uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n").encode()
    rec = np.zeros(len(xyz), dtype=[("p", "<f4", 3), ("c", "u1", 3)])
    rec["p"], rec["c"] = xyz, rgb
    return header + rec.tobytes()


def read_ply(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Points and colours back from :func:`ply_bytes` (raw outputs load back)."""
    end = data.index(b"end_header\n") + len(b"end_header\n")
    n = int(next(line for line in data[:end].decode().splitlines() if line.startswith("element vertex")).split()[-1])
    rec = np.frombuffer(data[end:], dtype=[("p", "<f4", 3), ("c", "u1", 3)], count=n)
    return rec["p"].copy(), rec["c"].copy()


def viewer_payload(xyz: np.ndarray, rgb: np.ndarray, title: str) -> str:
    """JSON the page's three.js viewer reads: base64 float32 positions and uint8 colours."""
    return json.dumps({"title": title, "count": len(xyz),
                       "positions": base64.b64encode(np.ascontiguousarray(xyz, "<f4").tobytes()).decode(),
                       "colors": base64.b64encode(np.ascontiguousarray(rgb, np.uint8).tobytes()).decode()})
