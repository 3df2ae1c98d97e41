"""Stop inside one network call: a call on a long clip or a big image can take many seconds, and a Stop that
waits for the end of a denoising step waits that long (Video Depth: one step over a window of 32 frames).

``stop_inside(module, cancel)`` checks the run's :class:`~backends.common.progress.CancelToken` before every
block of ``module`` runs — every submodule held in a ``ModuleList`` (diffusers keeps its down/up blocks,
resnets, attentions and transformer blocks in them) — and a cancelled token ends the call there with its
``Cancelled`` (and its reason). The hooks exist only inside the ``with`` block, and they act only on the
thread that entered it: one loaded model serves several sessions at once (a run and an estimate beside it),
and one session's Stop must not end another's call. ``stoppable_call(pipe, cancel, ...)`` runs a pipeline
call with those hooks and a ``callback_on_step_end`` that checks between steps too (``stop_between_steps``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import torch

from .progress import CancelToken


def blocks_of(module: torch.nn.Module) -> list[torch.nn.Module]:
    """The submodules held in a ``ModuleList`` (the units a network runs one after another)."""
    return [child for m in module.modules() if isinstance(m, torch.nn.ModuleList) for child in m]


@contextlib.contextmanager
def stop_inside(module: torch.nn.Module | None, cancel: CancelToken | None) -> Iterator[None]:
    if module is None or cancel is None:
        yield
        return

    owner = threading.get_ident()

    def before_block(_module, _inputs):
        if threading.get_ident() == owner:
            cancel.raise_if_cancelled()

    handles = [block.register_forward_pre_hook(before_block) for block in blocks_of(module)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def stop_between_steps(cancel: CancelToken | None):
    """A pipeline ``callback_on_step_end`` that raises the token's ``Cancelled`` once it is cancelled."""
    if cancel is None:
        return None

    def check(_pipe, _step, _timestep, tensors):
        cancel.raise_if_cancelled()
        return tensors

    return check


def stoppable_call(pipe, cancel: CancelToken | None, *args, **kwargs):
    """``pipe(*args, **kwargs)`` (a diffusers-style pipeline with a ``unet``) that Stop ends inside a UNet call
    and between steps, not only between calls: one denoising step over a window of 32 frames takes seconds on
    a CPU (more at larger sizes)."""
    with stop_inside(getattr(pipe, "unet", None), cancel):
        return pipe(*args, callback_on_step_end=stop_between_steps(cancel), **kwargs)
