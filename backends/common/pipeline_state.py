"""The two per-call flags diffusers' step callbacks read from a pipeline, shared by our DiffusionPipelines.

diffusers' ``PipelineCallback`` subclasses (e.g. ``SDCFGCutoffCallback``) compute their cutoff step from
``pipeline.num_timesteps``, and its pipelines end their denoising loop after a step when ``pipeline.interrupt``
is true (a step callback sets ``pipe._interrupt = True``). Each pipeline's ``__call__`` resets ``_interrupt``
and sets ``_num_timesteps`` when its loop starts; these are the defaults before the first call.
"""

from __future__ import annotations


class DenoisingLoopState:
    """Mixin for a ``DiffusionPipeline`` subclass: read-only ``interrupt`` and ``num_timesteps``.

    No ``__init__`` (the defaults are class attributes), so diffusers still reads the pipeline's own
    ``__init__`` signature for its components and config (``from_pretrained``, ``save_pretrained``).
    """

    _interrupt: bool = False
    _num_timesteps: int = 0

    @property
    def interrupt(self) -> bool:
        return self._interrupt

    @property
    def num_timesteps(self) -> int:
        """Steps of the current (or last) denoising loop, as diffusers' pipelines expose it for
        ``PipelineCallback`` cutoffs."""
        return self._num_timesteps
