"""Example clips a person can pick with one click: held-out primitive-world renders, made on first use.

They are rendered by ``data.render_clip`` from seeds that neither training (0…) nor the held-out
evaluation (``EVAL_SEED_OFFSET``…) uses, written once as small H.264 files into a cache folder and
reused — nothing big ships with the suite.
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

from backends.common.errors import InputError
from backends.common.video import write_mp4

EXAMPLE_SEED_OFFSET = 3_000_000
EXAMPLES = {  # name → (seed, frames)
    "room A · 48 frames": (EXAMPLE_SEED_OFFSET + 1, 48),
    "room B · 48 frames": (EXAMPLE_SEED_OFFSET + 2, 48),
    "room C · 120 frames": (EXAMPLE_SEED_OFFSET + 3, 120),
}
_lock = threading.Lock()


def cache_dir() -> Path:
    return Path(tempfile.gettempdir()) / "iclr25-studio" / "videodepth-examples"


def example_clip(name: str) -> Path:
    """The example's .mp4 (rendered on first use, 10 fps, 64×64)."""
    if name not in EXAMPLES:
        raise InputError(f"Unknown example {name!r}; choose one of: {', '.join(EXAMPLES)}.")
    seed, frames = EXAMPLES[name]
    path = cache_dir() / f"clip_{seed}_{frames}.mp4"
    with _lock:
        if not path.is_file():
            from .data import render_clip

            path.parent.mkdir(parents=True, exist_ok=True)
            write_mp4(render_clip(seed, frames).rgb, path, fps=10)  # whole or not at all (common.files)
    return path
