"""What a depth run turns into for people and other tools: the run's files and its one summary (the tab's
JSON and status line, the CLI's JSON line, the run card's result), colour maps, 16-bit PNGs, a ground-truth-free
flicker score, and a point cloud (``.ply`` and the compact form the browser's three.js viewer reads).

Disparity here is the model's relative disparity in [0, 1] (near = 1); its scale and shift are unknown,
so the point cloud assumes a depth range (``NEAR_FAR``) and a field of view, and says so.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
from PIL import Image

from backends.common import files
from backends.common.errors import InputError
from backends.common.imageio import upscale

COLORMAPS = ("Spectral", "inferno", "magma", "viridis", "turbo", "gray")
NEAR_FAR = (1.0, 5.0)  # depth range assumed for relative disparity when it is shown in 3D
FOV_DEG = 55.0  # horizontal field of view assumed for the point cloud
STATIC_RGB_CHANGE = 6  # a pixel is static between two frames when no channel changes by more (of 255)
# the files a run streams into its folder (the result's fields → names); per-frame PNGs and the raw stack
# are working files, removed when the run finishes
FILES = {"video": "depth_side_by_side.mp4", "png_zip": "depth_png16.zip", "npz": "disparity.npz"}
PREVIEW_HEIGHT = 192  # a preview frame is enlarged (nearest neighbour) to about this height for the eye


def write_files(result, folder: Path) -> dict[str, Path]:
    """The run's files in ``folder`` (field → path). The run wrote them while it streamed (a stopped run
    resumes from them), so this only adds what ``folder`` is missing: linked, or copied across file systems."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for field, name in FILES.items():
        source, target = Path(getattr(result, field)), folder / name
        if not target.exists():
            try:
                os.link(source, target)
            except OSError:
                with files.atomic_path(target) as tmp:
                    shutil.copyfile(source, tmp)
        out[field] = target
    return out


def run_summary(result) -> dict:
    """The one summary of a finished run (JSON, no paths): the tab's "Run (JSON)", the CLI's line and the
    run card's result."""
    return {"model": result.model_id, "device": result.device, "frames": result.frames, "size": list(result.size),
            "fps": result.fps, "truncated": result.truncated, "seconds": round(result.seconds, 2),
            "resumed_at_frame": result.resumed_at, "flicker": result.flicker,
            "baseline_flicker": result.baseline_flicker, "flicker_frames": result.flicker_frames,
            "notes": list(result.notes), "domain": result.domain.to_json() if result.domain is not None else None}


def summary_text(result) -> str:
    """The summary as one status line (Markdown): size, time, model, notes, the notice, the flicker scores."""
    flick = ""
    if result.flicker is not None and result.baseline_flicker is not None:
        flick = (f"\n\n**Flicker** (no ground truth: change of depth where the picture did not change, frames "
                 f"0–{result.flicker_frames - 1}; lower is steadier): ours **{result.flicker:.4f}** · same model "
                 f"frame by frame **{result.baseline_flicker:.4f}**")
    notes = " · ".join(n for n in result.notes if n != result.notice)
    warn = f"\n\n⚠️ {result.notice}" if result.notice else ""
    return (f"**Done:** {result.frames} frame(s) at {result.size[0]}×{result.size[1]} in {result.seconds:.1f} s · "
            f"model `{result.model_id}` on `{result.device}` · {notes}{warn}{flick}")


def preview_frame(frame: np.ndarray) -> np.ndarray:
    """A progress preview (input | depth at the working size) enlarged for the eye, pixels kept sharp."""
    return upscale(frame, max(1, PREVIEW_HEIGHT // frame.shape[0]))


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
