"""Stop inside one network call: a call on a long clip or a big image can take many seconds, and a Stop that
waits for the end of a denoising step waits that long (Video Depth: one step over a window of 32 frames).

``stop_inside(module, should_stop)`` asks ``should_stop()`` before every block of ``module`` runs — every
submodule held in a ``ModuleList`` (diffusers keeps its down/up blocks, resnets, attentions and transformer
blocks in them) — and a ``should_stop`` that raises (``CancelToken.raise_if_cancelled``) or returns True ends
the call there with ``Cancelled``. The hooks exist only inside the ``with`` block, and they act only on the
thread that entered it: one loaded model serves several sessions at once (a run and an estimate beside it), and
one session's Stop must not end another's call. ``stoppable_call(pipe, should_stop, ...)`` runs a pipeline call
with those hooks and a ``callback_on_step_end`` that asks between steps too (``stop_between_steps``).
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


def stop_between_steps(should_stop: Callable[[], bool] | None):
    """A pipeline ``callback_on_step_end`` that raises ``Cancelled`` once ``should_stop()`` says so."""
    if should_stop is None:
        return None

    def check(_pipe, _step, _timestep, tensors):
        if should_stop():
            raise Cancelled("Stopped.")
        return tensors

    return check


def stoppable_call(pipe, should_stop: Callable[[], bool] | None, *args, **kwargs):
    """``pipe(*args, **kwargs)`` (a diffusers-style pipeline with a ``unet``) that Stop ends inside a UNet call
    and between steps, not only between calls: one denoising step over a window of 32 frames takes seconds on
    a CPU (more at larger sizes)."""
    with stop_inside(getattr(pipe, "unet", None), should_stop):
        return pipe(*args, callback_on_step_end=stop_between_steps(should_stop), **kwargs)
