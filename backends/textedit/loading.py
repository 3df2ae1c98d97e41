"""Build the Text in Image pipeline for a registered model: the embedded one or a published checkpoint.

* ``textedit-embedded``: the folder ``TextEditPipeline.save_pretrained`` wrote (fp16 on disk, loaded in
  fp32 on a CPU);
* ``sdxl-base`` / ``sd3-medium`` / ``if-stage1``: diffusers' own ``StableDiffusionXLPipeline``,
  ``StableDiffusion3Pipeline`` and ``IFPipeline`` (stage I; the super-resolution stage is untouched,
  as in the paper), wrapped by ``PublishedTextPipeline``: the same text-layer processors on their
  denoiser and the same call as ``TextEditPipeline`` (record prompt B, replay its text K/V in A).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import torch

from backends.common.errors import InputError

from .attention import PatchController, TextLayer, check_heads, find_layers, install
from .models import DEFAULT_MODEL, MODEL_CHOICES, PRESETS, Preset
from .pipeline import TextEditOutput, TextEditPipeline, TextKV
from .requests import EMBEDDED_RULES, PRINTABLE, PUBLISHED_RULES, TextRules  # noqa: F401 (re-exported)


def load_embedded(folder: Path, device="cpu", dtype=torch.float32, name: str = DEFAULT_MODEL) -> TextEditPipeline:
    """The exported ``TextEditPipeline`` folder (``save_pretrained``: fp16 on disk, ``dtype`` here)."""
    pipe = TextEditPipeline.from_pretrained(Path(folder), dtype=dtype).to(device)
    pipe.name = name
    pipe.set_progress_bar_config(disable=True)
    return pipe


class PublishedTextPipeline:
    """A diffusers text-to-image pipeline with the text-layer processors on its denoiser.

    Called like ``TextEditPipeline``: prompt B is generated first with the chosen layers recording
    their text K/V, then prompt A from the same noise (a copy of the generator's state) with those
    layers replaying them from ``patch_start_step`` on. The step index is the number of denoiser
    calls so far in the run (every diffusers pipeline calls it once per step, CFG batched).
    """

    def __init__(self, pipe, name: str):
        self.pipe = pipe
        self.name = name
        self.denoiser = pipe.transformer if getattr(pipe, "transformer", None) is not None else pipe.unet
        self.controller = PatchController()
        self.layers: list[TextLayer] = install(self.denoiser, self.controller)
        self._callback: Callable | None = None
        self.denoiser.register_forward_pre_hook(self._before_step)
        self.denoiser.register_forward_hook(self._after_step)
        self._calls = 0
        self.phase, self.num_phases, self.phase_index = "generate", 1, 0
        pipe.set_progress_bar_config(disable=True)

    @property
    def device(self):
        return self.denoiser.device

    def _before_step(self, module, args):
        self.controller.step = self._calls

    def _after_step(self, module, args, out):
        if self._callback is not None:
            self._callback(self, self._calls, None, {})
        self._calls += 1

    def resolve_layers(self, layers: Sequence[str | int] | None) -> list[TextLayer]:
        return find_layers(self.layers, layers or ())

    def _generate(self, prompts: list[str], generator, n: int, guidance_scale: float, negative_prompt: str, callback):
        kwargs = dict(prompt=prompts, negative_prompt=[negative_prompt] * len(prompts), num_inference_steps=n,
                      guidance_scale=guidance_scale, generator=_copy(generator), output_type="np")
        if type(self.pipe).__name__.startswith("IF"):
            kwargs["clean_caption"] = False
        self._calls, self._callback = 0, callback
        try:
            return self.pipe(**kwargs).images
        finally:
            self._callback = None

    @torch.no_grad()
    def record(self, prompt, layers=None, num_inference_steps: int = 50, guidance_scale: float = 5.0,
               generator=None, negative_prompt: str = "", callback_on_step_end=None, **_) -> TextKV:
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        chosen = self.resolve_layers(layers) if layers is not None else list(self.layers)
        names = frozenset(layer.name for layer in chosen)
        c = self.controller
        try:
            c.reset(mode="record", layers=names)
            images = self._generate(prompts, generator, int(num_inference_steps), guidance_scale, negative_prompt,
                                    callback_on_step_end)
            cache = c.cache
        finally:
            c.reset()
        return TextKV(prompts, names, int(num_inference_steps), float(guidance_scale), cache, images)

    @torch.no_grad()
    def __call__(self, prompt, patch_prompt=None, patch_layers: Sequence[str | int] | None = None,
                 patch_heads: Mapping[str | int, Sequence[int]] | None = None, patch_start_step: int = 0,
                 num_inference_steps: int = 50, guidance_scale: float = 5.0, generator=None,
                 negative_prompt: str = "", patch_source: TextKV | None = None, callback_on_step_end=None,
                 **_) -> TextEditOutput:
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        generator = generator if generator is not None else torch.Generator().manual_seed(0)
        patching = patch_prompt is not None or patch_source is not None
        layers = self.resolve_layers(patch_layers) if patching else []
        names = frozenset(layer.name for layer in layers)
        by_index = {str(layer.index): layer.name for layer in self.layers}
        heads = check_heads(layers, {by_index.get(str(k), str(k)): v for k, v in (patch_heads or {}).items()})
        n = int(num_inference_steps)
        source = patch_source
        self.num_phases = 2 if names and source is None else 1
        if names and source is None:
            patch_prompts = [patch_prompt] * len(prompts) if isinstance(patch_prompt, str) else list(patch_prompt)
            self.phase, self.phase_index = "record B", 0
            source = self.record(patch_prompts, [layer.name for layer in layers], n, guidance_scale, generator,
                                 negative_prompt, callback_on_step_end)
        c = self.controller
        try:
            self.phase, self.phase_index = "generate", self.num_phases - 1
            if names:
                c.reset(mode="patch", layers=names, heads=heads, start_step=int(patch_start_step), cache=source.cache)
            images = self._generate(prompts, generator, n, guidance_scale, negative_prompt, callback_on_step_end)
            patched = tuple(layer.name for layer in layers if any(s[0] == layer.name for s in c.patched))
        finally:
            c.reset()
        return TextEditOutput(images=images, source_images=source.images if names else None, patched_layers=patched,
                              source=source if names else None)


def _copy(generator: torch.Generator) -> torch.Generator:
    """A generator in the same state: the B and A runs draw the same noise."""
    g = torch.Generator(device=generator.device)
    g.set_state(generator.get_state())
    return g


# diffusers' pipeline class of each published model, and what load_published passes it: IF's safety checker
# and watermarker are not loaded (the paper edits stage I's text layers only).
PIPELINES = {"sdxl-base": "StableDiffusionXLPipeline", "sd3-medium": "StableDiffusion3Pipeline",
             "if-stage1": "IFPipeline"}
PIPELINE_KWARGS = {"if-stage1": dict(safety_checker=None, watermarker=None, requires_safety_checker=False)}


def pipeline_class(spec_id: str):
    import diffusers

    return getattr(diffusers, PIPELINES[spec_id])


def load_published(spec_id: str, folder: Path, device="cpu", dtype=torch.float32,
                   variant: str | None = None) -> PublishedTextPipeline:
    """One of the paper's pipelines from its diffusers folder (``variant="fp16"``: its fp16 weight files)."""
    cls = pipeline_class(spec_id)
    pipe = cls.from_pretrained(folder, dtype=dtype, variant=variant, **PIPELINE_KWARGS.get(spec_id, {})).to(device)
    return PublishedTextPipeline(pipe, spec_id)


def load_for(spec_id: str, device="cpu", settings=None) -> tuple[TextEditPipeline | PublishedTextPipeline, Preset,
                                                                  TextRules]:
    """Resolve a registered model and build its pipeline, with its preset and text rules."""
    from backends.common.registry import default_registry

    if spec_id not in MODEL_CHOICES:
        raise InputError(f"Unknown Text in Image model {spec_id!r}; choose one of {', '.join(MODEL_CHOICES)}.")
    found = default_registry().resolve(spec_id, settings)
    if spec_id == DEFAULT_MODEL:
        return load_embedded(found.path, device), PRESETS[spec_id], EMBEDDED_RULES
    dtype = torch.float16 if str(device).startswith("cuda") else torch.float32
    return load_published(spec_id, found.path, device, dtype, found.variant), PRESETS[spec_id], PUBLISHED_RULES
