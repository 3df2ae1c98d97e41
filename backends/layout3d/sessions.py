"""Where the server keeps each user's scene between stages, within a memory budget.

A scene holds tensors — every stage's trajectory and recorded self-attention keys/values — so
scenes live here, keyed by a key the tab keeps per browser session (the tensors never go into
``gr.State``). When the scenes together pass
the budget, the least recently used ones are dropped, and their owners are told so when they come
back (``SceneExpired``: reload the scene's run.json), instead of failing somewhere later.

:func:`continued` is how a stage's work finds the scene it continues: the request names the live
scene (``scene_key``) and also holds everything a replay needs, so a scene this process no longer
holds (dropped, or the work runs elsewhere) is recomputed from the request — the same pixels, slower.
"""

from __future__ import annotations

import threading

import torch

from backends.common.errors import InputError
from backends.common.session_store import SessionStore

from .layout import Layout
from .requests import SceneRequest
from .stages import SceneSession

DEFAULT_BUDGET_MB = 1024


class SceneExpired(InputError):
    """The scene of this session was dropped to keep the server's memory within its budget."""

    def __init__(self, budget_mb: float):
        super().__init__(f"This scene expired: the server keeps scenes within {budget_mb:.0f} MB and dropped it "
                         "for newer ones. Reload its run.json (Rebuild from run.json) to continue from it.")


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


_STORE: SceneStore | None = None
_STORE_LOCK = threading.Lock()


def live_scenes() -> SceneStore:
    """This process's scenes, by the key the tab keeps per browser session (budget: ``ICLR25_LAYOUT3D_SCENE_MEMORY_MB``,
    ``backends.layout3d.settings``)."""
    global _STORE
    with _STORE_LOCK:
        if _STORE is None:
            from .settings import get_layout3d_settings

            _STORE = SceneStore(get_layout3d_settings().scene_memory_mb)
        return _STORE


def continued(request: SceneRequest) -> SceneSession | None:
    """A fork of the live scene ``request`` goes on from, when this process holds it with the request's model,
    settings and earlier layouts (then only the new stages run); ``None``: the history is to be recomputed."""
    if not request.scene_key:
        return None
    try:
        session = live_scenes().get(request.scene_key)
    except SceneExpired:
        return None
    if session is None or session.request is None or session.request.settings_key() != request.settings_key():
        return None
    earlier = request.earlier()
    if len(earlier) != len(session.stages) or not all(
            _same(a, st.layout) for a, st in zip(earlier, session.stages, strict=True)):
        return None
    return session.fork()


def _same(a: Layout, b: Layout) -> bool:
    return a.scene_prompt == b.scene_prompt and a.boxes == b.boxes
