"""Where the server keeps each user's scene between stages, within a memory budget.

A scene holds tensors — every stage's trajectory and recorded self-attention keys/values — so
scenes live here, keyed by the browser session, not in ``gr.State``. When the scenes together pass
the budget, the least recently used ones are dropped, and their owners are told so when they come
back (``SceneExpired``: reload the scene's stages.json), instead of failing somewhere later.
"""

from __future__ import annotations

import torch

from backends.common.errors import InputError
from backends.common.session_store import SessionStore

from .stages import SceneSession

DEFAULT_BUDGET_MB = 1024


class SceneExpired(InputError):
    """The scene of this session was dropped to keep the server's memory within its budget."""

    def __init__(self, budget_mb: float):
        super().__init__(f"This scene expired: the server keeps scenes within {budget_mb:.0f} MB and dropped it "
                         "for newer ones. Reload its stages.json (Rebuild from stages.json) to continue from it.")


def scene_bytes(session: SceneSession) -> int:
    """Memory of the tensors a scene keeps (each tensor counted once: stages share trajectories)."""
    seen: dict[int, int] = {}

    def add(x) -> None:
        if isinstance(x, torch.Tensor):
            seen.setdefault(x.untyped_storage().data_ptr(), x.untyped_storage().nbytes())
        elif isinstance(x, dict | list | tuple):
            for v in (x.values() if isinstance(x, dict) else x):
                add(v)

    add(session.noise)
    for st in session.stages:
        add([st.cache.latents, st.cache.kv, st.cache.cross_maps, st.cache.depth, st.source_latents])
    return sum(seen.values()) + sum(st.image.nbytes + st.depth.nbytes for st in session.stages)


class SceneStore(SessionStore[SceneSession]):
    """Scenes by session key, least recently used dropped first once their memory passes ``budget_mb``."""

    def __init__(self, budget_mb: float = DEFAULT_BUDGET_MB):
        self.budget_mb = float(budget_mb)
        super().__init__(budget_bytes=self.budget_mb * 2**20, size_of=scene_bytes,
                         expired=lambda key: SceneExpired(self.budget_mb))
