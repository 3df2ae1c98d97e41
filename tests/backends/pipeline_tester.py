"""One tester for the project's diffusers pipelines, in the manner of diffusers' ``PipelineTesterMixin``.

A pipeline's test class subclasses :class:`PipelineTesterMixin` and says how to build it
(``get_dummy_components``: tiny random models of the real classes), what to feed it
(``get_dummy_inputs``: a few seeded steps; ``get_default_inputs``: only the required inputs and a
generator, so every other setting is the pipeline's default) and how to read its output; the
mixin then checks every promise the README makes of a pipeline:

* a seeded expected slice at the default settings (1e-3: other weights move it by ~0.1);
* batch = single: a batch of two equals two single runs (or, where a call takes one item, a batch
  is refused with a clear error);
* a second dtype (bfloat16 on CPU) within a stated tolerance;
* ``save_pretrained`` → ``from_pretrained`` gives the same output;
* ``return_dict=False`` gives the output's fields, in order, as a tuple;
* ``callback_on_step_end``: every step, the named tensors and no others, replacing ``latents``,
  ``pipe._interrupt``; a diffusers ``PipelineCallback`` subclass (its ``tensor_inputs`` used, its
  cutoff computed from ``pipe.num_timesteps`` as diffusers' own callbacks do) and
  ``MultiPipelineCallbacks``; unknown tensor names refused with an error that names them.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from diffusers.callbacks import MultiPipelineCallbacks, PipelineCallback


def to_np(x) -> np.ndarray:
    return x.detach().float().cpu().numpy() if torch.is_tensor(x) else np.asarray(x)


def max_diff(a, b) -> float:
    return float(np.abs(to_np(a).astype(np.float64) - to_np(b).astype(np.float64)).max())


class ZeroLatentsAt(PipelineCallback):
    """A diffusers ``PipelineCallback`` as users write them: from the cutoff step on, the latents are
    replaced by zeros; the cutoff comes from ``cutoff_step_index`` or ``cutoff_step_ratio`` ×
    ``pipeline.num_timesteps`` (as diffusers' ``SDCFGCutoffCallback`` computes it). Records what it saw."""

    def __init__(self, names=("latents",), cutoff_step_ratio=None, cutoff_step_index=None):
        super().__init__(cutoff_step_ratio=cutoff_step_ratio, cutoff_step_index=cutoff_step_index)
        self.names = list(names)
        self.seen: list[tuple[int, list[str]]] = []

    @property
    def tensor_inputs(self) -> list[str]:
        return self.names

    def callback_fn(self, pipeline, step_index, timestep, callback_kwargs):
        self.seen.append((step_index, sorted(callback_kwargs)))
        index, ratio = self.config.cutoff_step_index, self.config.cutoff_step_ratio
        cutoff = index if index is not None else int(pipeline.num_timesteps * ratio)
        if step_index == cutoff:
            callback_kwargs["latents"] = torch.zeros_like(callback_kwargs["latents"])
        return callback_kwargs


class PipelineTesterMixin:
    """Mixed into a pipeline's test class; see the module docstring for what it checks."""

    pipeline_class: type
    # the slice ``output_slice`` takes of the output at ``get_default_inputs()`` (recorded from the code)
    expected_slice: list[float]
    expected_slice_atol = 1e-3
    # False where one call takes one item (a clip): then a batch must be refused with ``batch_error``
    batch_supported = True
    batch_error: tuple[type[Exception], str] = (ValueError, "")
    # the second dtype and its (max, mean) tolerance against float32
    second_dtype: torch.dtype = torch.bfloat16
    second_dtype_tolerance = (3e-2, 3e-2)
    batch_atol = 1e-4
    save_load_atol = 1e-5

    # --- what a subclass provides -------------------------------------------------------------------

    def get_dummy_components(self, seed: int = 0) -> dict:
        raise NotImplementedError

    def get_dummy_inputs(self, seed: int = 0) -> dict:
        """Inputs for a fast call (a few seeded steps)."""
        raise NotImplementedError

    def get_default_inputs(self, seed: int = 0) -> dict:
        """The required inputs and a seeded generator only: every setting at the pipeline's default."""
        raise NotImplementedError

    def get_batch_inputs(self) -> tuple[dict, list[dict]]:
        """A batch of two, and the two single calls it must equal."""
        raise NotImplementedError

    def output_array(self, out) -> np.ndarray:
        """The output's main array (images, disparity) as a numpy array, batch first."""
        return to_np(out.images)

    def output_slice(self, array: np.ndarray) -> np.ndarray:
        return array[0, -3:, -3:, -1].flatten()

    def zeroed_output(self, pipe, inputs: dict) -> np.ndarray:
        """What ``output_array`` must be when a callback sets the final latents to zero."""
        raise NotImplementedError

    def callback_timesteps(self, pipe) -> list:
        """The timesteps the callback is called with, in order."""
        return pipe.scheduler.timesteps.tolist()

    def cast_inputs(self, inputs: dict, dtype: torch.dtype) -> dict:
        return inputs

    # --- helpers ------------------------------------------------------------------------------------

    def get_pipe(self, seed: int = 0):
        pipe = self.pipeline_class(**self.get_dummy_components(seed))
        pipe.set_progress_bar_config(disable=True)
        return pipe

    def run(self, pipe, inputs=None, **kw):
        return pipe(**{**(inputs or self.get_dummy_inputs()), **kw})

    # --- the checks ---------------------------------------------------------------------------------

    def test_expected_slice_at_default_settings(self):
        got = self.output_slice(self.output_array(self.run(self.get_pipe(), self.get_default_inputs())))
        assert got.shape == np.shape(self.expected_slice)
        assert np.abs(got - np.array(self.expected_slice)).max() < self.expected_slice_atol, got.round(4).tolist()

    def test_batch_equals_single(self):
        pipe = self.get_pipe()
        batch, singles = self.get_batch_inputs()
        if not self.batch_supported:
            kind, match = self.batch_error
            with pytest.raises(kind, match=match):
                self.run(pipe, batch)
            return
        batched = self.output_array(self.run(pipe, batch))
        ones = [self.output_array(self.run(pipe, s)) for s in singles]
        assert len(batched) == len(singles) == 2
        for got, one in zip(batched, ones, strict=True):
            assert max_diff(got, one[0]) < self.batch_atol
        assert max_diff(ones[0], ones[1]) > 1e-3  # the two items differ, so the check is not vacuous

    def test_second_dtype(self):
        pipe = self.get_pipe()
        ref = self.output_array(self.run(pipe))
        pipe.to(self.second_dtype)
        assert all(m.dtype == self.second_dtype for m in pipe.components.values() if isinstance(m, torch.nn.Module)
                   and any(True for _ in m.parameters()))
        low = self.output_array(self.run(pipe, self.cast_inputs(self.get_dummy_inputs(), self.second_dtype)))
        diff = np.abs(low.astype(np.float64) - ref)
        atol_max, atol_mean = self.second_dtype_tolerance
        assert diff.max() < atol_max and diff.mean() < atol_mean, (diff.max(), diff.mean())

    def test_save_load_round_trip(self, tmp_path):
        pipe = self.get_pipe()
        pipe.save_pretrained(tmp_path)
        assert (tmp_path / "model_index.json").is_file()
        loaded = self.pipeline_class.from_pretrained(tmp_path)
        loaded.set_progress_bar_config(disable=True)
        public = lambda config: {k: v for k, v in config.items() if not k.startswith("_")}  # noqa: E731
        assert public(loaded.config) == public(pipe.config)  # components' classes, optional ones, settings
        assert max_diff(self.output_array(self.run(pipe)), self.output_array(self.run(loaded))) < self.save_load_atol

    def test_return_dict_false_gives_the_fields_as_a_tuple(self):
        pipe = self.get_pipe()
        out = self.run(pipe)
        tup = self.run(pipe, return_dict=False)
        fields = [getattr(out, f.name) for f in dataclasses.fields(out)]
        assert isinstance(tup, tuple) and len(tup) == len(fields)
        for a, b in zip(tup, fields, strict=True):
            if torch.is_tensor(a) or isinstance(a, np.ndarray):
                assert max_diff(a, b) == 0
            else:
                assert type(a) is type(b)

    def test_callback_gets_every_step_and_the_named_tensors(self):
        pipe = self.get_pipe()
        seen = []

        def callback(p, i, t, kwargs):
            assert p is pipe
            seen.append((i, float(t), sorted(kwargs)))
            return {}

        names = list(pipe._callback_tensor_inputs)
        assert "latents" in names
        self.run(pipe, callback_on_step_end=callback, callback_on_step_end_tensor_inputs=names)
        steps = self.callback_timesteps(pipe)
        assert [s[0] for s in seen] == list(range(len(steps)))
        assert [s[1] for s in seen] == [float(t) for t in steps]
        assert all(s[2] == sorted(names) for s in seen)
        seen.clear()
        self.run(pipe, callback_on_step_end=callback, callback_on_step_end_tensor_inputs=["latents"])
        assert seen and all(s[2] == ["latents"] for s in seen)

    def test_callback_can_replace_the_latents(self):
        pipe = self.get_pipe()
        last = []

        def zero_at_the_last_step(p, i, t, kwargs):
            last.append(i)
            return {"latents": torch.zeros_like(kwargs["latents"])} if i == p.num_timesteps - 1 else {}

        inputs = self.get_dummy_inputs()
        out = self.output_array(self.run(pipe, inputs, callback_on_step_end=zero_at_the_last_step))
        assert last[-1] == pipe.num_timesteps - 1
        assert max_diff(out, self.zeroed_output(pipe, inputs)) < 1e-5

    def test_interrupt_ends_the_loop_after_the_step(self):
        pipe = self.get_pipe()
        calls = []

        def stop(p, i, t, kwargs):
            calls.append(i)
            p._interrupt = True
            return {}

        self.run(pipe, callback_on_step_end=stop)
        assert calls == [0]

    def test_pipeline_callback_subclass(self):
        """A ``PipelineCallback`` instance: its ``tensor_inputs`` replace the call's, its cutoff (from
        ``num_timesteps``) acts at the right step — the same output as a plain function doing the same."""
        pipe = self.get_pipe()
        names = list(pipe._callback_tensor_inputs)
        cb = ZeroLatentsAt(names, cutoff_step_ratio=0.5)
        got = self.output_array(self.run(pipe, callback_on_step_end=cb))  # the call's own names: ("latents",)
        n = pipe.num_timesteps
        assert [s[0] for s in cb.seen] == list(range(n)) and all(s[1] == sorted(names) for s in cb.seen)

        def same(p, i, t, kwargs):
            return {"latents": torch.zeros_like(kwargs["latents"])} if i == int(n * 0.5) else {}

        assert max_diff(got, self.output_array(self.run(pipe, callback_on_step_end=same))) < 1e-6
        assert max_diff(got, self.output_array(self.run(pipe))) > 1e-4  # the callback changed the output

        last = ZeroLatentsAt(cutoff_step_index=n - 1)
        inputs = self.get_dummy_inputs()
        assert max_diff(self.output_array(self.run(pipe, inputs, callback_on_step_end=last)),
                        self.zeroed_output(pipe, inputs)) < 1e-5

    def test_multi_pipeline_callbacks(self):
        pipe = self.get_pipe()
        watch, zero = ZeroLatentsAt(["latents"], cutoff_step_index=10 ** 6), ZeroLatentsAt(cutoff_step_index=0)
        got = self.output_array(self.run(pipe, callback_on_step_end=MultiPipelineCallbacks([watch, zero])))
        assert [s[0] for s in watch.seen] == [s[0] for s in zero.seen] == list(range(pipe.num_timesteps))
        alone = self.output_array(self.run(pipe, callback_on_step_end=ZeroLatentsAt(cutoff_step_index=0)))
        assert max_diff(got, alone) < 1e-6

    def test_unknown_tensor_names_are_refused(self):
        pipe = self.get_pipe()
        with pytest.raises(ValueError, match=r"callback_on_step_end_tensor_inputs.*not_a_tensor"):
            self.run(pipe, callback_on_step_end=lambda p, i, t, kw: {},
                     callback_on_step_end_tensor_inputs=["latents", "not_a_tensor"])
        with pytest.raises(ValueError, match=r"callback_on_step_end_tensor_inputs.*not_a_tensor"):
            self.run(pipe, callback_on_step_end=ZeroLatentsAt(["not_a_tensor"], cutoff_step_index=0))
