"""Where the server keeps each user's scene between stages, within a memory budget.

A scene holds tensors — every stage's trajectory and recorded self-attention keys/values — so
scenes live here, keyed by the browser session, not in ``gr.State``. When the scenes together pass
the budget, the least recently used ones are dropped, and their owners are told so when they come
back (``SceneExpired``: reload the scene's stages.json), instead of failing somewhere later.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import torch

from backends.common.errors import InputError

from .stages import SceneSession

DEFAULT_BUDGET_MB = 1024
REMEMBER_EXPIRED = 10_000  # keys whose scene was dropped, to say so (oldest forgotten first)


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


class SceneStore:
    """Scenes by session key, least recently used dropped first once their memory passes ``budget_mb``."""

    def __init__(self, budget_mb: float = DEFAULT_BUDGET_MB):
        self.budget_mb = float(budget_mb)
        self._scenes: OrderedDict[str, tuple[SceneSession, int]] = OrderedDict()
        self._expired: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> SceneSession | None:
        """The key's scene (now most recently used); ``None`` if it never had one; ``SceneExpired`` if dropped."""
        with self._lock:
            if key in self._scenes:
                self._scenes.move_to_end(key)
                return self._scenes[key][0]
            if key in self._expired:
                raise SceneExpired(self.budget_mb)
            return None

    def put(self, key: str, session: SceneSession) -> list[str]:
        """Keep (or re-measure) the key's scene; returns the keys dropped to stay within the budget."""
        size = scene_bytes(session)
        with self._lock:
            self._scenes[key] = (session, size)
            self._scenes.move_to_end(key)
            self._expired.pop(key, None)
            dropped = []
            while self.used_bytes > self.budget_mb * 2**20 and len(self._scenes) > 1:
                old, _ = self._scenes.popitem(last=False)
                dropped.append(old)
                self._expired[old] = None
            while len(self._expired) > REMEMBER_EXPIRED:
                self._expired.popitem(last=False)
            return dropped

    def drop(self, key: str) -> None:
        """The user left: forget the scene without calling it expired."""
        with self._lock:
            self._scenes.pop(key, None)
            self._expired.pop(key, None)

    @property
    def used_bytes(self) -> int:
        return sum(size for _, size in self._scenes.values())

    def __len__(self) -> int:
        return len(self._scenes)
