"""Text-to-image with the text keys/values of chosen layers taken from another prompt, as a diffusers pipeline.

``TextEditPipeline(prompt=A)`` is plain text-to-image. With ``patch_prompt=B`` and ``patch_layers``,
it is the paper's activation patching (``py-xis/t2i: src/attention_localization_*.py``,
``src/edit_*.py``): first prompt B is generated from the same noise while the layers' text K/V
projections are recorded at every step, then prompt A is generated while those layers (optionally
only ``patch_heads`` of them) replay B's K/V from step ``patch_start_step`` on. All other layers see A.
This one call serves the localization scan (one layer at a time), editing (the localized layers)
and toxic-text prevention (B = the prompt with a benign word); the B run is also the plain
prompt-swap baseline, returned as ``source_images``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import PIL.Image
import torch
from diffusers import DiffusionPipeline
from diffusers.callbacks import MultiPipelineCallbacks, PipelineCallback
from diffusers.image_processor import VaeImageProcessor
from diffusers.utils import BaseOutput

from backends.common.imageio import to_uint8  # noqa: F401 (the pipeline's images as uint8; re-exported)
from backends.common.noise import initial_latents
from backends.common.pipeline_state import DenoisingLoopState

from .attention import PatchController, TextLayer, check_heads, find_layers, install
from .networks import encode_prompts, latent_channels, unet_input


@dataclass
class TextKV:
    """Prompt B's text K/V projections of some layers at every step of a run from a given noise.

    ``pipe.record(...)`` makes one; ``pipe(..., patch_source=kv)`` replays it in any number of
    patched runs from the same noise (the localization scan records every layer once).
    """

    prompts: list[str]
    layers: frozenset[str]
    num_inference_steps: int
    guidance_scale: float
    cache: dict
    images: np.ndarray | list[PIL.Image.Image] | torch.Tensor | None = None


@dataclass
class TextEditOutput(BaseOutput):
    """``images``: prompt A's images (patched when asked), as ``output_type`` asks (np: B×H×W×3 in [0, 1]);
    ``source_images``: prompt B's plain images from the same noise (``None`` without patching);
    ``latents``: A's final latents; ``patched_layers``: the names of the layers that were patched;
    ``source``: B's recorded K/V (reusable through ``patch_source``)."""

    images: np.ndarray | list[PIL.Image.Image] | torch.Tensor
    source_images: np.ndarray | list[PIL.Image.Image] | torch.Tensor | None = None
    latents: torch.Tensor | None = None
    patched_layers: tuple[str, ...] = ()
    source: TextKV | None = None


class TextEditPipeline(DenoisingLoopState, DiffusionPipeline):
    """``vae`` + ``text_encoder``/``tokenizer`` + ``unet`` (``UNet2DConditionModel``) + a DDIM ``scheduler``.

    ``layers`` lists the UNet's text layers (``attn2`` of every transformer block) in execution order.
    """

    model_cpu_offload_seq = "text_encoder->unet->vae"
    _callback_tensor_inputs = ["latents", "pred_original_sample", "noise_pred"]

    def __init__(self, vae, text_encoder, tokenizer, unet, scheduler):
        super().__init__()
        self.register_modules(vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet, scheduler=scheduler)
        self.vae_scale_factor = 2 ** (len(self.vae.config.block_out_channels) - 1)
        self.image_processor = VaeImageProcessor(vae_scale_factor=self.vae_scale_factor)
        self.name = ""  # the registered model id, set by the loader (shown in the UI)
        self.controller = PatchController()
        self.layers: list[TextLayer] = install(unet, self.controller)
        for m in (vae, text_encoder, unet):
            m.eval().requires_grad_(False)
        self.phase, self.num_phases, self.phase_index = "generate", 1, 0

    @property
    def default_size(self) -> tuple[int, int]:
        s = self.unet.config.sample_size
        h, w = (s, s) if isinstance(s, int) else s
        return h * self.vae_scale_factor, w * self.vae_scale_factor

    # --- components ------------------------------------------------------------------------
    def prepare_latents(self, batch_size: int, height: int, width: int, generator=None,
                        latents: torch.Tensor | None = None) -> torch.Tensor:
        """The initial noise (drawn in float32, so a seed gives the same noise in every dtype), unscaled."""
        shape = (batch_size, latent_channels(self.unet), height // self.vae_scale_factor,
                 width // self.vae_scale_factor)
        return initial_latents(shape, generator, latents, self.unet.device, self.unet.dtype)

    @torch.no_grad()
    def encode_prompt(self, prompts: list[str], guidance_scale: float, negative_prompt: str = "") -> torch.Tensor:
        """Text embeddings; with CFG the batch is [uncond…, cond…] (uncond = the negative prompt, default empty)."""
        cond = encode_prompts(self.tokenizer, self.text_encoder, prompts)
        if guidance_scale <= 1.0:
            return cond.to(self.unet.dtype)
        unc = encode_prompts(self.tokenizer, self.text_encoder, [negative_prompt] * len(prompts))
        return torch.cat([unc, cond]).to(self.unet.dtype)

    @torch.no_grad()
    def predict_noise(self, latents: torch.Tensor, t, embeds: torch.Tensor, guidance_scale: float) -> torch.Tensor:
        cfg = guidance_scale > 1.0
        x = torch.cat([latents, latents]) if cfg else latents
        x = self.scheduler.scale_model_input(x, t)
        eps = self.unet(unet_input(self.unet, x), t, encoder_hidden_states=embeds).sample
        if not cfg:
            return eps
        u, c = eps.chunk(2)
        return u + guidance_scale * (c - u)

    def resolve_layers(self, layers: Sequence[str | int] | None) -> list[TextLayer]:
        """The UNet's text layers by name, index or label (``InputError`` for unknown ones)."""
        return find_layers(self.layers, layers or ())

    @torch.no_grad()
    def decode(self, latents: torch.Tensor, output_type: str = "np"):
        if output_type == "latent":
            return latents
        img = self.vae.decode(latents / self.vae.config.scaling_factor, return_dict=False)[0]
        return self.image_processor.postprocess(img.float(), output_type=output_type)

    # --- the call --------------------------------------------------------------------------
    def check_inputs(self, prompts: list[str], patch_prompts: list[str] | None, source: TextKV | None, start: int,
                     n: int, guidance_scale: float, tensor_inputs) -> None:
        if patch_prompts is not None and len(patch_prompts) != len(prompts):
            raise ValueError(f"{len(patch_prompts)} patch prompts for {len(prompts)} prompts")
        if source is not None:
            if patch_prompts is not None:
                raise ValueError("give either patch_prompt or patch_source, not both")
            if (len(source.prompts), source.num_inference_steps, source.guidance_scale) != \
                    (len(prompts), n, float(guidance_scale)):
                raise ValueError("patch_source was recorded with another batch size, step count or guidance scale")
        if not 0 <= start <= n:
            raise ValueError(f"patch_start_step must be in [0, {n}], got {start}")
        bad = [k for k in tensor_inputs if k not in self._callback_tensor_inputs]
        if bad:
            raise ValueError(f"`callback_on_step_end_tensor_inputs` has to be in {self._callback_tensor_inputs}, "
                             f"but found {bad}")

    def _denoise(self, latents, embeds, guidance_scale, n, callback, tensor_inputs):
        self.scheduler.set_timesteps(n, device=self.unet.device)
        self._num_timesteps = len(self.scheduler.timesteps)
        latents = latents * self.scheduler.init_noise_sigma
        with self.progress_bar(total=n) as progress_bar:
            for i, t in enumerate(self.scheduler.timesteps):
                if self.interrupt:
                    break
                self.controller.step = i
                noise_pred = self.predict_noise(latents, t, embeds, guidance_scale)
                step = self.scheduler.step(noise_pred, t, latents)
                latents, pred_original_sample = step.prev_sample, step.pred_original_sample
                if callback is not None:
                    tensors = {"latents": latents, "pred_original_sample": pred_original_sample,
                               "noise_pred": noise_pred}
                    outputs = callback(self, i, t, {k: tensors[k] for k in tensor_inputs})
                    latents = (outputs or {}).pop("latents", latents)
                progress_bar.update()
        return latents

    @torch.no_grad()
    def record(self, prompt: str | list[str], layers: Sequence[str | int] | None = None, num_inference_steps: int = 20,
               guidance_scale: float = 5.0, latents: torch.Tensor | None = None, generator=None,
               height: int | None = None, width: int | None = None, negative_prompt: str = "",
               output_type: str = "np", callback_on_step_end=None,
               callback_on_step_end_tensor_inputs: Sequence[str] = ("latents",)) -> TextKV:
        """Generate ``prompt`` (B) recording the text K/V of ``layers`` (default: all) at every step."""
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        chosen = self.resolve_layers(layers) if layers is not None else list(self.layers)
        n = int(num_inference_steps)
        h0, w0 = self.default_size
        noise = self.prepare_latents(len(prompts), height or h0, width or w0, generator, latents)
        c = self.controller
        names = frozenset(layer.name for layer in chosen)
        try:
            c.reset(mode="record", layers=names)
            embeds = self.encode_prompt(prompts, guidance_scale, negative_prompt)
            out = self._denoise(noise, embeds, guidance_scale, n, callback_on_step_end,
                                callback_on_step_end_tensor_inputs)
            cache = c.cache
        finally:
            c.reset()
        return TextKV(prompts, names, n, float(guidance_scale), cache, self.decode(out, output_type))

    @torch.no_grad()
    def __call__(
        self,
        prompt: str | list[str],
        patch_prompt: str | list[str] | None = None,
        patch_layers: Sequence[str | int] | None = None,
        patch_heads: Mapping[str | int, Sequence[int]] | None = None,
        patch_start_step: int = 0,
        num_inference_steps: int = 20,
        guidance_scale: float = 5.0,
        generator: torch.Generator | list[torch.Generator] | None = None,
        latents: torch.Tensor | None = None,
        height: int | None = None,
        width: int | None = None,
        negative_prompt: str = "",
        patch_source: TextKV | None = None,
        output_type: str = "np",
        return_dict: bool = True,
        callback_on_step_end: Callable[[DiffusionPipeline, int, int, dict], dict] | PipelineCallback
        | MultiPipelineCallbacks | None = None,
        callback_on_step_end_tensor_inputs: Sequence[str] = ("latents",),
    ) -> TextEditOutput | tuple:
        """Generate ``prompt``; with ``patch_prompt`` and ``patch_layers``, patch those layers' text K/V.

        Args:
            prompt: prompt A (a list for a batch).
            patch_prompt: prompt B (one per prompt A, or one for all); its K/V are recorded in a run
                from the same noise (or given as ``patch_source``, recorded earlier by ``record``
                from the same noise, steps and guidance).
            patch_layers: layers by module name or execution index (``pipe.layers``); empty = no patching.
            patch_heads: ``{layer: head indices}`` to patch only those heads of a layer (others: all).
            patch_start_step: the first step index that is patched (the reference's
                ``timestep_start_patching``; steps before it see A everywhere).
            num_inference_steps, guidance_scale, generator, latents, height, width, negative_prompt:
                as in diffusers (the negative prompt is the unconditional branch of CFG).
            callback_on_step_end: ``fn(pipe, step_index, timestep, callback_kwargs) -> dict`` after every
                step of every run; ``pipe.phase`` (``"record B"`` / ``"generate"``), ``pipe.phase_index``
                and ``pipe.num_phases`` tell which run. A ``latents`` entry of the returned dict
                replaces the loop's; raising from it (e.g. ``Cancelled``) stops the call and
                ``pipe._interrupt = True`` ends the current run after the step.
        """
        if isinstance(callback_on_step_end, PipelineCallback | MultiPipelineCallbacks):
            callback_on_step_end_tensor_inputs = callback_on_step_end.tensor_inputs
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        patch_prompts = None
        if patch_prompt is not None:
            patch_prompts = [patch_prompt] * len(prompts) if isinstance(patch_prompt, str) else list(patch_prompt)
        n = int(num_inference_steps)
        self.check_inputs(prompts, patch_prompts, patch_source, int(patch_start_step), n, guidance_scale,
                          callback_on_step_end_tensor_inputs)
        patching = patch_prompts is not None or patch_source is not None
        layers = self.resolve_layers(patch_layers) if patching else []
        names = frozenset(layer.name for layer in layers)
        if patch_source is not None and not names <= patch_source.layers:
            missing = sorted(names - patch_source.layers)
            raise ValueError(f"patch_source has no recording of {missing}")
        by_index = {str(layer.index): layer.name for layer in self.layers}
        heads = check_heads(layers, {by_index.get(str(k), str(k)): v for k, v in (patch_heads or {}).items()})
        self._interrupt = False
        h0, w0 = self.default_size
        noise = self.prepare_latents(len(prompts), height or h0, width or w0, generator, latents)
        self.num_phases = 2 if names and patch_source is None else 1
        source = patch_source
        if names and source is None:
            self.phase, self.phase_index = "record B", 0
            source = self.record(patch_prompts, [layer.name for layer in layers], n, guidance_scale, noise,
                                 negative_prompt=negative_prompt, output_type=output_type,
                                 callback_on_step_end=callback_on_step_end,
                                 callback_on_step_end_tensor_inputs=callback_on_step_end_tensor_inputs)
        c = self.controller
        try:
            self.phase, self.phase_index = "generate", self.num_phases - 1
            if names:
                c.reset(mode="patch", layers=names, heads=heads, start_step=int(patch_start_step), cache=source.cache)
            embeds = self.encode_prompt(prompts, guidance_scale, negative_prompt)
            out = self._denoise(noise, embeds, guidance_scale, n, callback_on_step_end,
                                callback_on_step_end_tensor_inputs)
            patched = tuple(layer.name for layer in layers if any(s[0] == layer.name for s in c.patched))
        finally:
            c.reset()
        images = self.decode(out, output_type)
        self.maybe_free_model_hooks()
        source_images = source.images if source is not None and names else None
        kept_source = source if names else None
        if not return_dict:
            return images, source_images, out, patched, kept_source
        return TextEditOutput(images=images, source_images=source_images, latents=out, patched_layers=patched,
                              source=kept_source)
