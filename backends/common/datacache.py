"""Rendered datasets kept on disk: render once (in worker processes), then load from an ``.npz``.

Training scripts and benches of several capabilities render their splits from ``backends/synth``;
this is the one place that caches them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np


def cached_arrays(path: Path, seeds: Sequence[int], make_arrays: Callable[[Sequence[int]], dict[str, np.ndarray]],
                  workers: int = 2, chunk: int = 1000) -> dict[str, np.ndarray]:
    """``make_arrays(seeds)`` (a module-level function, so it can run in worker processes), cached at ``path``."""
    path = Path(path)
    if path.exists():
        with np.load(path) as f:
            return {k: f[k] for k in f.files}
    path.parent.mkdir(parents=True, exist_ok=True)
    chunks = [seeds[i:i + chunk] for i in range(0, len(seeds), chunk)]
    if workers > 1 and len(chunks) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            parts = list(pool.map(make_arrays, chunks))
    else:
        parts = [make_arrays(c) for c in chunks]
    arrays = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.rename(path)
    return arrays
