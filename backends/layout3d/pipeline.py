"""Build-A-Scene as a diffusers-style pipeline: box-depth-conditioned generation in stages.

One pipeline serves the embedded model (a UNet that takes the box depth as extra channels) and the
published stack (SD 1.5 + a depth ``ControlNetModel`` with the LooseControl LoRA). Per stage
(``abdo-eldesokey/build-a-scene: src/pipeline/bas_pipeline.py``):

* every stage starts from the **same initial noise**;
* **latent blending**: for the first ``blend_fraction`` (90%) of the steps the target latent outside
  the new box is the source's latent of that step — the previous stage, replayed from its cache —
  the rest run free to harmonise;
* **Dynamic Self-Attention** from ``dsa.start_fraction`` of the steps on (``attention.py``).

The source's self-attention keys/values are recorded when a stage is generated, so the next stage
runs one branch instead of two (``source_kv="cache"``; ``"recompute"`` runs the source in the batch
as the reference does). A move re-uses the same loop with the source being a composite of cached
trajectories and an extra latent copy of the DDIM-inverted, warped object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from .attention import AttentionController, DSAConfig, install
from .networks import depth_channels, encode_prompts


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
class StageOutput:
    image: np.ndarray  # H×W×3 uint8
    cache: StageCache
    latent: torch.Tensor


@dataclass
class StepPreview:
    step: int
    total: int
    x0: torch.Tensor  # predicted clean latent of the target (for previews)


class BuildAScenePipeline:
    """``vae`` + ``text_encoder``/``tokenizer`` + ``unet`` (+ ``controlnet``) + a DDIM ``scheduler``."""

    def __init__(self, vae, text_encoder, tokenizer, unet, scheduler, controlnet=None, name: str = "",
                 prompt_prefix: str = "", negative_prompt: str = ""):
        self.vae, self.text_encoder, self.tokenizer = vae, text_encoder, tokenizer
        self.unet, self.scheduler, self.controlnet = unet, scheduler, controlnet
        self.name = name
        self.prompt_prefix, self.negative_prompt = prompt_prefix, negative_prompt
        self.controller = AttentionController()
        install(unet, self.controller)
        for m in (vae, text_encoder, unet, controlnet):
            if m is not None:
                m.eval().requires_grad_(False)

    # --- components ------------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        return next(self.unet.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.unet.parameters()).dtype

    @property
    def vae_scale(self) -> int:
        return 2 ** (len(self.vae.config.block_out_channels) - 1)

    def latent_shape(self, height: int, width: int) -> tuple[int, int, int, int]:
        return (1, self.unet.config.out_channels, height // self.vae_scale, width // self.vae_scale)

    def initial_noise(self, height: int, width: int, seed: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(int(seed))
        return torch.randn(self.latent_shape(height, width), generator=g).to(self.device, self.dtype)

    @torch.no_grad()
    def embed(self, prompts: list[str], guidance_scale: float) -> torch.Tensor:
        """Text embeddings; with CFG the batch is [uncond…, cond…]."""
        cond = encode_prompts(self.tokenizer, self.text_encoder, [self.prompt_prefix + p for p in prompts])
        if guidance_scale <= 1.0:
            return cond.to(self.dtype)
        unc = encode_prompts(self.tokenizer, self.text_encoder, [self.negative_prompt] * len(prompts))
        return torch.cat([unc, cond]).to(self.dtype)

    @torch.no_grad()
    def predict_noise(self, latents: torch.Tensor, t, embeds: torch.Tensor, depth: torch.Tensor,
                      guidance_scale: float) -> torch.Tensor:
        """ε̂ for a batch of latents (B) with their depths (B×1×H×W); CFG doubles the batch inside."""
        cfg = guidance_scale > 1.0
        x = torch.cat([latents, latents]) if cfg else latents
        d = torch.cat([depth, depth]) if cfg else depth
        x = self.scheduler.scale_model_input(x, t)
        if self.controlnet is not None:
            cond = d.expand(-1, 3, -1, -1).to(self.dtype)
            down, mid = self.controlnet(x, t, encoder_hidden_states=embeds, controlnet_cond=cond,
                                        return_dict=False)
            eps = self.unet(x, t, encoder_hidden_states=embeds, down_block_additional_residuals=down,
                            mid_block_additional_residual=mid).sample
        else:
            size = x.shape[-1] * depth_channels_factor(self)
            d = F.interpolate(d.float(), size=(size, size), mode="area") if d.shape[-1] != size else d
            eps = self.unet(torch.cat([x, depth_channels(d.to(x.dtype), depth_channels_factor(self))], 1), t,
                            encoder_hidden_states=embeds).sample
        if not cfg:
            return eps
        u, c = eps.chunk(2)
        return u + guidance_scale * (c - u)

    @torch.no_grad()
    def decode(self, latents: torch.Tensor) -> np.ndarray:
        img = self.vae.decode(latents / self.vae.config.scaling_factor).sample
        img = ((img[0].float().clamp(-1, 1) + 1) * 127.5 + 0.5).clamp(0, 255)
        return img.permute(1, 2, 0).byte().cpu().numpy()

    @torch.no_grad()
    def encode(self, image: np.ndarray) -> torch.Tensor:
        x = torch.from_numpy(image).permute(2, 0, 1)[None].float().to(self.device) / 127.5 - 1
        return self.vae.encode(x.to(self.dtype)).latent_dist.mean * self.vae.config.scaling_factor

    def token_index(self, prompt: str) -> int:
        """Position of the prompt's last word in the token sequence (for its cross-attention map)."""
        ids = self.tokenizer(self.prompt_prefix + prompt).input_ids
        special = {self.tokenizer.bos_token_id, self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        words = [i for i, t in enumerate(ids) if t not in special]
        return words[-1] if words else 0

    # --- the loop ----------------------------------------------------------------------------
    def stage(self, prompt: str, depth: torch.Tensor, noise: torch.Tensor, *, num_inference_steps: int = 20,
              guidance_scale: float = 7.5, source: StageCache | None = None, box_mask: torch.Tensor | None = None,
              mode: str = "dsa", dsa: DSAConfig | None = None, blend_fraction: float = 0.9,
              source_kv: str = "cache", copy_latents: list[torch.Tensor] | None = None,
              copy_mask: torch.Tensor | None = None, record: bool = True,
              callback_on_step_end: Callable[[StepPreview], None] | None = None) -> Iterator[StepPreview | StageOutput]:
        """Generate one stage; yields a ``StepPreview`` per step, then the ``StageOutput``.

        ``source`` = None is a plain generation (stage 0, or the one-shot baseline). Otherwise
        ``mode`` is ``"dsa"`` (Build-A-Scene), ``"mutual"`` (MasaCtrl baseline, no blending) or
        ``"blend"`` (latent blending alone). ``copy_latents``/``copy_mask`` overwrite the target
        inside the mask with given per-step latents for the first ``blend_fraction`` (the move).
        """
        if mode not in ("dsa", "mutual", "blend"):
            raise ValueError(f"unknown stage mode {mode!r}")
        dsa = dsa or DSAConfig()
        n = int(num_inference_steps)
        self.scheduler.set_timesteps(n, device=self.device)
        timesteps = self.scheduler.timesteps
        c = self.controller
        latent_hw = tuple(noise.shape[-2:])
        use_cache = source is not None and source_kv == "cache" and bool(source.kv) and not dsa.blend_sattn \
            and source.guidance_scale == guidance_scale and len(source.latents) == n + 1  # blending needs h_src
        attn_mode = {"dsa": "dsa", "mutual": "mutual", "blend": "plain"}[mode] if source is not None else "plain"
        c.reset(mode="plain", config=dsa, num_steps=n, latent_hw=latent_hw,
                   mask=None if box_mask is None else box_mask.to(self.device, self.dtype))
        c.record_kv = {} if record else None
        c.record_maps = {} if record else None
        tokens = [n for n in (256, 1024, 64) if n <= latent_hw[0] * latent_hw[1]]  # 16×16 maps when the latent allows
        c.map_tokens = tokens[0] if tokens else latent_hw[0] * latent_hw[1]
        embeds_t = self.embed([prompt], guidance_scale)
        # with the source in the batch: [u_src, u_tgt, c_src, c_tgt], as predict_noise doubles [src, tgt]
        embeds_pair = self.embed([source.prompt, prompt], guidance_scale) if source is not None and not use_cache else None
        keep = None
        if box_mask is not None and mode != "mutual":
            keep = F.interpolate(1 - box_mask.float(), size=latent_hw, mode="bilinear", align_corners=False).to(self.dtype)
        copy = None
        if copy_mask is not None:
            copy = F.interpolate(copy_mask.float(), size=latent_hw, mode="bilinear", align_corners=False).to(self.dtype)
        n_blend = int(blend_fraction * n)
        latents = noise.clone()
        history: list[torch.Tensor] = []
        for i, t in enumerate(timesteps):
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
                eps = self.predict_noise(pair, t, embeds_pair, torch.cat([source.depth, depth]),
                                         guidance_scale)[1:]
            else:
                c.mode = attn_mode if needs_source else "plain"
                c.source_kv = source.kv if needs_source else None
                eps = self.predict_noise(latents, t, embeds_t, depth, guidance_scale)
            step = self.scheduler.step(eps, t, latents)
            latents = step.prev_sample
            preview = StepPreview(i + 1, n, step.pred_original_sample)
            if callback_on_step_end is not None:
                callback_on_step_end(preview)
            yield preview
        history.append(latents)
        cache = StageCache(prompt, depth, history, dict(c.record_kv or {}), guidance_scale, dict(c.record_maps or {}))
        c.reset()
        yield StageOutput(self.decode(latents), cache, latents)

    def generate(self, *args, **kwargs) -> StageOutput:
        """``stage`` run to the end."""
        return list(self.stage(*args, **kwargs))[-1]

    @torch.no_grad()
    def invert(self, image: np.ndarray, prompt: str, depth: torch.Tensor, *, num_inference_steps: int = 20,
               guidance_scale: float = 1.0) -> list[torch.Tensor]:
        """DDIM inversion: the latents aligned with the sampling steps (``[i]`` = input of step i) + x0 last."""
        n = int(num_inference_steps)
        self.scheduler.set_timesteps(n, device=self.device)
        timesteps = self.scheduler.timesteps
        alphas = self.scheduler.alphas_cumprod.to(self.device)
        final = self.scheduler.final_alpha_cumprod.to(self.device)
        embeds = self.embed([prompt], guidance_scale)
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
        # seq = [x0, x_{t_N-1}, ..., x_{t_0}]: step i of sampling (timestep timesteps[i]) takes seq[n - i]
        return [seq[n - i] for i in range(n)] + [seq[0]]


def depth_channels_factor(pipe: BuildAScenePipeline) -> int:
    extra = pipe.unet.config.in_channels - pipe.unet.config.out_channels
    f = int(round(extra ** 0.5))
    if f * f != extra:
        raise ValueError(f"UNet takes {extra} extra channels, not a square pixel-unshuffle of the depth")
    return f
