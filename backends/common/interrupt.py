"""Stop inside one network call: a call on a long clip or a big image can take many seconds, and a Stop that
waits for the end of a denoising step waits that long (Video Depth: one step over a window of 32 frames).

``stop_inside(module, should_stop)`` asks ``should_stop()`` before every block of ``module`` runs — every
submodule held in a ``ModuleList`` (diffusers keeps its down/up blocks, resnets, attentions and transformer
blocks in them) — and a ``should_stop`` that raises (``CancelToken.raise_if_cancelled``) or returns True ends
the call there with ``Cancelled``. The hooks exist only inside the ``with`` block, and they act only on the
thread that entered it: one loaded model serves several sessions at once (a run and an estimate beside it), and
one session's Stop must not end another's call.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

import torch

from .errors import Cancelled


def blocks_of(module: torch.nn.Module) -> list[torch.nn.Module]:
    """The submodules held in a ``ModuleList`` (the units a network runs one after another)."""
    return [child for m in module.modules() if isinstance(m, torch.nn.ModuleList) for child in m]


@contextlib.contextmanager
def stop_inside(module: torch.nn.Module | None, should_stop: Callable[[], bool] | None) -> Iterator[None]:
    if module is None or should_stop is None:
        yield
        return

    owner = threading.get_ident()

    def before_block(_module, _inputs):
        if threading.get_ident() == owner and should_stop():
            raise Cancelled("Stopped.")

    handles = [block.register_forward_pre_hook(before_block) for block in blocks_of(module)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()
