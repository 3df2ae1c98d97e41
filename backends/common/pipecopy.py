"""One request, one scheduler: a pipeline shared between requests is copied per request.

A diffusers scheduler is stateful (``set_timesteps`` fills its timesteps and sigmas, ``step`` moves its
step index), so two threads stepping the same pipeline corrupt each other's runs ("index 2 is out of
bounds for dimension 0 with size 2"). diffusers' advice for servers is a scheduler per request over the
shared models; :func:`for_request` gives exactly that: a shallow copy of the pipeline that shares every
model (weights are only read) and owns a fresh copy of its scheduler and its per-call flags.
"""

from __future__ import annotations

import copy


def fresh_scheduler(scheduler):
    """A scheduler of the same kind and configuration with no state of a run (``from_config`` for diffusers
    schedulers; a deep copy of anything else, which is small: tables of a few thousand numbers)."""
    if scheduler is None:
        return None
    from_config, config = getattr(scheduler, "from_config", None), getattr(scheduler, "config", None)
    if callable(from_config) and config is not None:
        return from_config(config)
    return copy.deepcopy(scheduler)


def for_request(pipe):
    """A per-request view of ``pipe``: the same models, its own scheduler (and its own attributes, so a
    call's ``_interrupt`` or step counters do not leak into another's). Cheap: no weight is copied."""
    out = copy.copy(pipe)  # a new __dict__: attributes set by a call stay on this copy
    if getattr(pipe, "scheduler", None) is not None:
        # bypass DiffusionPipeline.__setattr__ (it would rewrite the config shared with the original)
        object.__setattr__(out, "scheduler", fresh_scheduler(pipe.scheduler))
    return out
