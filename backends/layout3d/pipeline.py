"""Build-A-Scene as a diffusers pipeline: box-depth-conditioned generation of one stage of a scene.

One ``DiffusionPipeline`` serves the embedded model (a UNet that takes the box depth as extra
channels) and the published stack (SD 1.5 + a depth ``ControlNetModel`` with the LooseControl LoRA).
``__call__`` generates one stage (``abdo-eldesokey/build-a-scene: src/pipeline/bas_pipeline.py``):

* every stage of a scene starts from the **same initial noise** (pass it as ``latents``);
* **latent blending**: for the first ``blend_fraction`` (90%) of the steps the target latent outside
  the new box is the source's latent of that step — the previous stage, replayed from its
  ``StageCache`` — the rest run free to harmonise;
* **Dynamic Self-Attention** from ``dsa.start_fraction`` of the steps on (``attention.py``).

The source's self-attention keys/values are recorded when a stage is generated, so the next stage
runs one branch instead of two (``source_kv="cache"``; ``"recompute"`` runs the source in the batch
as the reference does). A move (``stages.py``) re-uses the same call with the source being a
composite of cached trajectories and an extra latent copy (``copy_latents``) of the DDIM-inverted
(``invert``), warped object. Without a ``source`` it is a plain depth-conditioned text-to-image call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import PIL.Image
import torch
import torch.nn.functional as F
from diffusers import DiffusionPipeline
from diffusers.callbacks import MultiPipelineCallbacks, PipelineCallback
from diffusers.image_processor import VaeImageProcessor
from diffusers.utils import BaseOutput

from backends.common.noise import initial_latents
from backends.common.pipeline_state import DenoisingLoopState
from backends.common.tinysd import depth_channels, encode_prompts

from .attention import AttentionController, DSAConfig, install

MODES = ("dsa", "mutual", "blend")


@dataclass
class StageCache:
    """What a later stage needs of this one."""

    prompt: str
    depth: torch.Tensor  # 1×1×H×W in [0, 1]
    latents: list[torch.Tensor]  # the input latent of every step, then the final latent (N+1)
    kv: dict = field(default_factory=dict)  # recorded self-attention keys/values from the DSA start on
    guidance_scale: float = 1.0
    cross_maps: dict = field(default_factory=dict)

    @property
    def final(self) -> torch.Tensor:
        return self.latents[-1]


@dataclass
class BuildASceneOutput(BaseOutput):
    """``images`` as ``output_type`` asks (np: B×H×W×3 floats in [0, 1]); ``latents``: the final latents;
    ``cache``: the stage's trajectory and recorded attention (``None`` when not recorded or interrupted)."""

    images: np.ndarray | list[PIL.Image.Image] | torch.Tensor
    latents: torch.Tensor | None = None
    cache: StageCache | None = None


def to_uint8(images: np.ndarray) -> np.ndarray:
    """``output_type="np"`` images (floats in [0, 1]) → uint8, rounded as diffusers' ``numpy_to_pil``."""
    return (np.asarray(images) * 255).round().astype(np.uint8)


class BuildAScenePipeline(DenoisingLoopState, DiffusionPipeline):
    """``vae`` + ``text_encoder``/``tokenizer`` + ``unet`` (+ ``controlnet``) + a DDIM ``scheduler``.

    ``prompt_prefix`` and ``negative_prompt`` are part of the pipeline's config (SD: the paper's
    "4k, high-res, realistic, " prefix and its negative prompt; the embedded model: none).
    """

    model_cpu_offload_seq = "text_encoder->controlnet->unet->vae"
    _optional_components = ["controlnet"]
    _callback_tensor_inputs = ["latents", "pred_original_sample", "noise_pred"]

    def __init__(self, vae, text_encoder, tokenizer, unet, scheduler, controlnet=None, prompt_prefix: str = "",
                 negative_prompt: str = ""):
        super().__init__()
        self.register_modules(vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet,
                              scheduler=scheduler, controlnet=controlnet)
        self.register_to_config(prompt_prefix=prompt_prefix, negative_prompt=negative_prompt)
        self.vae_scale_factor = 2 ** (len(self.vae.config.block_out_channels) - 1)
        self.image_processor = VaeImageProcessor(vae_scale_factor=self.vae_scale_factor)
        self.name = ""  # the registered model id, set by the loader (shown in the UI)
        self.controller = AttentionController()
        install(unet, self.controller)
        for m in (vae, text_encoder, unet, controlnet):
            if m is not None:
                m.eval().requires_grad_(False)

    # --- components ------------------------------------------------------------------------
    def prepare_latents(self, batch_size: int, height: int, width: int, generator=None,
                        latents: torch.Tensor | None = None) -> torch.Tensor:
        """The initial noise (drawn in float32, so a seed gives the same noise in every dtype)."""
        shape = (batch_size, self.unet.config.out_channels, height // self.vae_scale_factor,
                 width // self.vae_scale_factor)
        return initial_latents(shape, generator, latents, self.unet.device, self.unet.dtype) * self.scheduler.init_noise_sigma

    @torch.no_grad()
    def encode_prompt(self, prompts: list[str], guidance_scale: float) -> torch.Tensor:
        """Text embeddings; with CFG the batch is [uncond…, cond…]."""
        cond = encode_prompts(self.tokenizer, self.text_encoder, [self.config.prompt_prefix + p for p in prompts])
        if guidance_scale <= 1.0:
            return cond.to(self.unet.dtype)
        unc = encode_prompts(self.tokenizer, self.text_encoder, [self.config.negative_prompt] * len(prompts))
        return torch.cat([unc, cond]).to(self.unet.dtype)

    @torch.no_grad()
    def predict_noise(self, latents: torch.Tensor, t, embeds: torch.Tensor, depth: torch.Tensor,
                      guidance_scale: float) -> torch.Tensor:
        """ε̂ for a batch of latents (B) with their depths (B×1×H×W); CFG doubles the batch inside."""
        cfg = guidance_scale > 1.0
        dtype = self.unet.dtype
        x = torch.cat([latents, latents]) if cfg else latents
        d = torch.cat([depth, depth]) if cfg else depth
        x = self.scheduler.scale_model_input(x, t)
        if self.controlnet is not None:
            cond = d.expand(-1, 3, -1, -1).to(dtype)
            down, mid = self.controlnet(x, t, encoder_hidden_states=embeds, controlnet_cond=cond, return_dict=False)
            eps = self.unet(x, t, encoder_hidden_states=embeds, down_block_additional_residuals=down,
                            mid_block_additional_residual=mid).sample
        else:
            f = self.depth_factor
            size = x.shape[-1] * f
            d = F.interpolate(d.float(), size=(size, size), mode="area") if d.shape[-1] != size else d
            eps = self.unet(torch.cat([x, depth_channels(d.to(dtype), f)], 1), t, encoder_hidden_states=embeds).sample
        if not cfg:
            return eps
        u, c = eps.chunk(2)
        return u + guidance_scale * (c - u)

    @property
    def depth_factor(self) -> int:
        """The pixel-unshuffle factor of the depth the embedded UNet takes as extra channels."""
        extra = self.unet.config.in_channels - self.unet.config.out_channels
        f = int(round(extra ** 0.5))
        if f * f != extra:
            raise ValueError(f"UNet takes {extra} extra channels, not a square pixel-unshuffle of the depth")
        return f

    @torch.no_grad()
    def decode(self, latents: torch.Tensor) -> np.ndarray:
        """The first latent of a batch as an H×W×3 uint8 image (previews, composites)."""
        img = self.vae.decode(latents[:1] / self.vae.config.scaling_factor, return_dict=False)[0]
        return to_uint8(self.image_processor.postprocess(img.float(), output_type="np")[0])

    @torch.no_grad()
    def encode(self, image: np.ndarray) -> torch.Tensor:
        x = torch.from_numpy(image).permute(2, 0, 1)[None].float().to(self.unet.device) / 127.5 - 1
        return self.vae.encode(x.to(self.vae.dtype)).latent_dist.mean * self.vae.config.scaling_factor

    def token_index(self, prompt: str) -> int:
        """Position of the prompt's last word in the token sequence (for its cross-attention map)."""
        ids = self.tokenizer(self.config.prompt_prefix + prompt).input_ids
        special = {self.tokenizer.bos_token_id, self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        words = [i for i, t in enumerate(ids) if t not in special]
        return words[-1] if words else 0

    # --- the call --------------------------------------------------------------------------
    def check_inputs(self, prompts: list[str], depth: torch.Tensor, source, mode: str, tensor_inputs) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown stage mode {mode!r}; one of {MODES}")
        if depth.ndim != 4 or depth.shape[1] != 1 or depth.shape[0] not in (1, len(prompts)):
            raise ValueError(f"depth must be B×1×H×W with B = 1 or {len(prompts)}, got {tuple(depth.shape)}")
        if source is not None and len(prompts) != 1:
            raise ValueError("a stage with a source runs one scene at a time (one prompt)")
        bad = [k for k in tensor_inputs if k not in self._callback_tensor_inputs]
        if bad:
            raise ValueError(f"`callback_on_step_end_tensor_inputs` has to be in {self._callback_tensor_inputs}, "
                             f"but found {bad}")

    @torch.no_grad()
    def __call__(
        self,
        prompt: str | list[str],
        depth: torch.Tensor,
        num_inference_steps: int = 20,
        guidance_scale: float = 7.5,
        generator: torch.Generator | list[torch.Generator] | None = None,
        latents: torch.Tensor | None = None,
        source: StageCache | None = None,
        box_mask: torch.Tensor | None = None,
        mode: str = "dsa",
        dsa: DSAConfig | None = None,
        blend_fraction: float = 0.9,
        source_kv: str = "cache",
        copy_latents: list[torch.Tensor] | None = None,
        copy_mask: torch.Tensor | None = None,
        record: bool = True,
        output_type: str = "np",
        return_dict: bool = True,
        callback_on_step_end: Callable[[DiffusionPipeline, int, int, dict], dict] | PipelineCallback
        | MultiPipelineCallbacks | None = None,
        callback_on_step_end_tensor_inputs: Sequence[str] = ("latents",),
    ) -> BuildASceneOutput | tuple:
        """Generate one stage (or, without ``source``, a plain box-depth-conditioned image).

        Args:
            prompt: the stage's prompt (a list for a batch of plain generations).
            depth: B×1×H×W box depth in [0, 1] (near = bright); it sets the output size.
            num_inference_steps, guidance_scale, generator, latents: as in diffusers (DDIM steps, CFG,
                the initial noise's generator(s) or the noise itself — pass the scene's noise to
                every stage).
            source: the stage this one builds on; ``None`` is a plain generation (stage 0, the
                one-shot baseline). ``mode`` is then ``"dsa"`` (Build-A-Scene), ``"mutual"``
                (MasaCtrl baseline, no blending) or ``"blend"`` (latent blending alone).
            box_mask: 1×1×H×W mask of the new box; outside it the source's latents are kept for the
                first ``blend_fraction`` of the steps, inside it DSA lets the target see itself.
            copy_latents, copy_mask: per-step latents written inside ``copy_mask`` for the blended
                steps (a move's inverted, warped object).
            record: keep the trajectory and the self-attention keys/values for the next stage.
            callback_on_step_end: ``fn(pipe, step_index, timestep, callback_kwargs) -> dict`` after every
                step, with the tensors named in ``callback_on_step_end_tensor_inputs`` (from
                ``_callback_tensor_inputs``: ``latents``, ``pred_original_sample`` — x̂0, for previews
                — and ``noise_pred``); a ``latents`` entry of the returned dict replaces the loop's.
                Raising from it (e.g. ``Cancelled``) stops the call; ``pipe._interrupt = True``
                ends it after the step, with no cache.
        """
        if isinstance(callback_on_step_end, PipelineCallback | MultiPipelineCallbacks):
            callback_on_step_end_tensor_inputs = callback_on_step_end.tensor_inputs
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        self.check_inputs(prompts, depth, source, mode, callback_on_step_end_tensor_inputs)
        self._interrupt = False
        dsa = dsa or DSAConfig()
        n = int(num_inference_steps)
        device, dtype = self.unet.device, self.unet.dtype
        batch = len(prompts)
        depth = depth.to(device, dtype).expand(batch, -1, -1, -1)
        height, width = depth.shape[-2:]
        latents = self.prepare_latents(batch, height, width, generator, latents)
        self.scheduler.set_timesteps(n, device=device)
        timesteps = self.scheduler.timesteps
        self._num_timesteps = len(timesteps)
        latent_hw = tuple(latents.shape[-2:])
        use_cache = (source is not None and source_kv == "cache" and bool(source.kv) and not dsa.blend_sattn
                     and source.guidance_scale == guidance_scale and len(source.latents) == n + 1)  # blending needs h_src
        attn_mode = {"dsa": "dsa", "mutual": "mutual", "blend": "plain"}[mode] if source is not None else "plain"
        c = self.controller
        c.reset(mode="plain", config=dsa, num_steps=n, latent_hw=latent_hw,
                mask=None if box_mask is None else box_mask.to(device, dtype))
        c.record_kv = {} if record else None
        c.record_maps = {} if record else None
        tokens = [k for k in (256, 1024, 64) if k <= latent_hw[0] * latent_hw[1]]  # 16×16 maps when the latent allows
        c.map_tokens = tokens[0] if tokens else latent_hw[0] * latent_hw[1]
        embeds = self.encode_prompt(prompts, guidance_scale)
        # with the source in the batch: [u_src, u_tgt, c_src, c_tgt], as predict_noise doubles [src, tgt]
        embeds_pair = self.encode_prompt([source.prompt] + prompts, guidance_scale) \
            if source is not None and not use_cache else None
        keep = None
        if box_mask is not None and mode != "mutual":
            keep = F.interpolate(1 - box_mask.float(), size=latent_hw, mode="bilinear", align_corners=False)
            keep = keep.to(device, dtype)
        copy = None
        if copy_mask is not None:
            copy = F.interpolate(copy_mask.float(), size=latent_hw, mode="bilinear", align_corners=False)
            copy = copy.to(device, dtype)
        n_blend = int(blend_fraction * n)
        history: list[torch.Tensor] = []
        try:
            with self.progress_bar(total=n) as progress_bar:
                for i, t in enumerate(timesteps):
                    if self.interrupt:
                        break
                    if source is not None and keep is not None and i < n_blend:
                        latents = keep * source.latents[i] + (1 - keep) * latents
                    if copy is not None and copy_latents is not None and i < n_blend:
                        latents = copy * copy_latents[i] + (1 - copy) * latents
                    history.append(latents)
                    c.step = i
                    needs_source = source is not None and attn_mode != "plain" and i >= c.start_step
                    if needs_source and not use_cache:
                        c.mode, c.source_kv = attn_mode, None
                        pair = torch.cat([source.latents[i], latents])
                        noise_pred = self.predict_noise(pair, t, embeds_pair, torch.cat([source.depth.to(depth), depth]),
                                                        guidance_scale)[1:]
                    else:
                        c.mode = attn_mode if needs_source else "plain"
                        c.source_kv = source.kv if needs_source else None
                        noise_pred = self.predict_noise(latents, t, embeds, depth, guidance_scale)
                    step = self.scheduler.step(noise_pred, t, latents)
                    latents, pred_original_sample = step.prev_sample, step.pred_original_sample
                    if callback_on_step_end is not None:
                        tensors = {"latents": latents, "pred_original_sample": pred_original_sample,
                                   "noise_pred": noise_pred}
                        outputs = callback_on_step_end(self, i, t, {k: tensors[k] for k in
                                                                    callback_on_step_end_tensor_inputs})
                        latents = (outputs or {}).pop("latents", latents)
                    progress_bar.update()
            complete = len(history) == n
            history.append(latents)
            cache = StageCache(prompts[0], depth[:1], history, dict(c.record_kv or {}), guidance_scale,
                               dict(c.record_maps or {})) if record and complete else None
        finally:
            c.reset()
        if output_type == "latent":
            images = latents
        else:
            decoded = self.vae.decode(latents / self.vae.config.scaling_factor, return_dict=False)[0]
            images = self.image_processor.postprocess(decoded.float(), output_type=output_type)
        self.maybe_free_model_hooks()
        if not return_dict:
            return images, latents, cache
        return BuildASceneOutput(images=images, latents=latents, cache=cache)

    @torch.no_grad()
    def invert(self, image: np.ndarray, prompt: str, depth: torch.Tensor, num_inference_steps: int = 20,
               guidance_scale: float = 1.0, callback_on_step_end: Callable | None = None) -> list[torch.Tensor]:
        """DDIM inversion: the latents aligned with the sampling steps (``[i]`` = input of step i) + x0 last.

        ``callback_on_step_end(pipe, j, t, {"latents": x})`` after every inversion step (progress, cancel).
        """
        n = int(num_inference_steps)
        device = self.unet.device
        self.scheduler.set_timesteps(n, device=device)
        timesteps = self.scheduler.timesteps
        alphas = self.scheduler.alphas_cumprod.to(device)
        final = self.scheduler.final_alpha_cumprod.to(device)
        embeds = self.encode_prompt([prompt], guidance_scale)
        depth = depth.to(device, self.unet.dtype)
        self.controller.reset()
        x = self.encode(image)
        seq = [x]
        ts = list(timesteps.flip(0))
        for j, t in enumerate(ts):
            a_prev = alphas[ts[j - 1]] if j > 0 else final
            a_t = alphas[t]
            eps = self.predict_noise(x, t, embeds, depth, guidance_scale)
            x0 = (x - (1 - a_prev).sqrt() * eps) / a_prev.sqrt()
            x = a_t.sqrt() * x0 + (1 - a_t).sqrt() * eps
            seq.append(x)
            if callback_on_step_end is not None:
                callback_on_step_end(self, j, t, {"latents": x})
        # seq = [x0, x_{t_N-1}, ..., x_{t_0}]: step i of sampling (timestep timesteps[i]) takes seq[n - i]
        return [seq[n - i] for i in range(n)] + [seq[0]]
