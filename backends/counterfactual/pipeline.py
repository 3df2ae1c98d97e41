"""RCSB: the region-constrained, classifier-guided Schrödinger-bridge sampler (diffusers-style pipeline).

Per step n → n′ (the published sampler, ``sobieskibj/rcsb``):
  1. x̂0 = x_n − σ_fwd(n)·ε_θ(x_n, n)                               (Tweedie-style estimate)
  2. g  = ∇_{x_n} log p(target | rescale(x̂0))                       (back through the network)
  3. g ← Adam moment ratio m̂/(√v̂+ε), reset per trajectory; g ← g / ‖g_first‖
  4. x_n ← x_n + s·g;   x_{n′} = posterior(x_n, x̂0)                  (OT-ODE, deterministic)
  5. x_{n′} ← (1−M)·x1 + M·x_{n′}                                    (hard region constraint)
Starting at τ·T from the bridge marginal between the image and x1 = x·(1−M) + M·noise.

The baselines of the bench run through the same code: ``guidance="noisy"`` differentiates the
classifier on x_n directly (no Tweedie, no stabilisation), and a full mask is unconstrained guidance.

``RCSBPipeline`` is a diffusers ``DiffusionPipeline``: components ``bridge`` (ε_θ), ``classifier``
and ``scheduler`` (the bridge's ``BridgeSchedule``), one ``__call__`` with ``generator``,
``num_inference_steps`` and ``callback_on_step_end``, an ``RCSBOutput``; ``save_pretrained`` /
``from_pretrained`` write and read a pipeline folder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import PIL.Image
import torch
import torch.nn.functional as F
from diffusers import DiffusionPipeline
from diffusers.callbacks import MultiPipelineCallbacks, PipelineCallback
from diffusers.utils import BaseOutput

from backends.common.pipeline_state import DenoisingLoopState

from .schedule import BridgeSchedule, corrupt


@dataclass
class RCSBOutput(BaseOutput):
    """``images``: the counterfactuals (``output_type="pt"``: B×3×H×W in [-1, 1], the input's space, so
    outside the mask they are exactly the input; ``"np"``: B×H×W×3 floats in [0, 1]; ``"pil"``);
    ``x1``: the corrupted endpoints the bridge started from."""

    images: torch.Tensor | np.ndarray | list[PIL.Image.Image]
    x1: torch.Tensor | None = None


class AdamStabilizer:
    """Adam's bias-corrected moment ratio, applied to guidance gradients (state per trajectory)."""

    def __init__(self, betas=(0.9, 0.999), eps: float = 1e-8):
        self.b1, self.b2 = betas
        self.eps = eps
        self.m = self.v = None
        self.k = 0

    def __call__(self, g: torch.Tensor) -> torch.Tensor:
        self.k += 1
        self.m = (1 - self.b1) * g if self.m is None else self.b1 * self.m + (1 - self.b1) * g
        self.v = (1 - self.b2) * g * g if self.v is None else self.b2 * self.v + (1 - self.b2) * g * g
        m_hat = self.m / (1 - self.b1**self.k)
        v_hat = self.v / (1 - self.b2**self.k)
        return m_hat / (v_hat.sqrt() + self.eps)


def rescale_for_classifier(x: torch.Tensor, mode: str) -> torch.Tensor:
    """[-1, 1] → [0, 1]: per-image min-max (as RCSB does for x̂0) or a plain clamp."""
    if mode == "minmax":
        lo = x.amin((1, 2, 3), keepdim=True)
        hi = x.amax((1, 2, 3), keepdim=True)
        return (x - lo) / (hi - lo).clamp_min(1e-5)
    return ((x + 1) / 2).clamp(0, 1)


class RCSBPipeline(DenoisingLoopState, DiffusionPipeline):
    """``bridge(x_n, n, mask) → ε̂`` + ``classifier(images in [0, 1]) → logits`` + the bridge ``scheduler``."""

    model_cpu_offload_seq = "bridge->classifier"
    _optional_components = ["scheduler"]
    _callback_tensor_inputs = ["latents", "pred_original_sample", "x1", "mask"]

    def __init__(self, bridge: torch.nn.Module, classifier: torch.nn.Module, scheduler: BridgeSchedule | None = None):
        super().__init__()
        self.register_modules(bridge=bridge, classifier=classifier,
                              scheduler=scheduler if scheduler is not None else BridgeSchedule())
        for m in (bridge, classifier):
            m.eval().requires_grad_(False)

    def check_inputs(self, image, mask, target, guidance, classifier_input, tensor_inputs) -> None:
        if image.ndim != 4 or image.shape[1] != 3:
            raise ValueError(f"image must be B×3×H×W in [-1, 1], got {tuple(image.shape)}")
        if mask.ndim != 4 or mask.shape[1] != 1 or mask.shape[-2:] != image.shape[-2:] \
                or mask.shape[0] not in (1, image.shape[0]):
            raise ValueError(f"mask must be 1×1×H×W or B×1×H×W like the image, got {tuple(mask.shape)}")
        if not isinstance(target, int | np.integer) or isinstance(target, bool):
            raise ValueError(f"target must be a class index, got {target!r}")
        if guidance not in ("tweedie", "noisy", "none") or classifier_input not in ("minmax", "clamp"):
            raise ValueError(f"unknown guidance {guidance!r} or classifier input {classifier_input!r}")
        bad = [k for k in tensor_inputs if k not in self._callback_tensor_inputs]
        if bad:
            raise ValueError(f"`callback_on_step_end_tensor_inputs` has to be in {self._callback_tensor_inputs}, "
                             f"but found {bad}")

    def __call__(
        self,
        image: torch.Tensor,
        mask: torch.Tensor,
        target: int,
        num_inference_steps: int = 100,
        start_step: int | None = None,
        start_fraction: float = 0.6,
        guidance_scale: float = 1.5,
        num_images_per_prompt: int = 1,
        guidance: Literal["tweedie", "noisy", "none"] = "tweedie",
        stabilize: bool = True,
        classifier_input: Literal["minmax", "clamp"] = "minmax",
        generator: torch.Generator | list[torch.Generator] | None = None,
        output_type: str = "pt",
        return_dict: bool = True,
        callback_on_step_end: Callable[[DiffusionPipeline, int, int, dict], dict] | PipelineCallback
        | MultiPipelineCallbacks | None = None,
        callback_on_step_end_tensor_inputs: Sequence[str] = ("latents",),
    ) -> RCSBOutput | tuple:
        """Counterfactuals of ``image`` that the classifier calls ``target``, changed only inside ``mask``.

        Args:
            image: 1×3×H×W or B×3×H×W in [-1, 1].
            mask: 1×1×H×W or B×1×H×W, 1 = editable.
            target: the class index to flip to.
            num_inference_steps: network calls from the start step down to 0 (paper: 100).
            start_step / start_fraction: the bridge step τ·T to start from (paper: 0.6).
            guidance_scale: the step size s of the classifier guidance (paper: 1.5).
            num_images_per_prompt: counterfactuals per image (a 1-image input is repeated).
            guidance: ``"tweedie"`` (RCSB: the gradient of log p(target | x̂0) back through the bridge),
                ``"noisy"`` (the classifier on x_n, a baseline) or ``"none"`` (the bridge alone).
            stabilize: Adam moment ratio + first-gradient norm (RCSB) or the raw gradient.
            generator: the generator(s) of the region's starting noise (one per image of a batch).
            callback_on_step_end: ``fn(pipe, step_index, timestep, callback_kwargs) -> dict`` after every step
                with the tensors named in ``callback_on_step_end_tensor_inputs`` (from
                ``_callback_tensor_inputs``: ``latents`` — x_n after the region constraint —,
                ``pred_original_sample`` — x̂0, for previews —, ``x1``, ``mask``); a ``latents`` entry of
                the returned dict replaces the loop's (the region constraint is applied again after it).
                Raising from it stops the call; ``pipe._interrupt = True`` ends it after the step.
        """
        if isinstance(callback_on_step_end, PipelineCallback | MultiPipelineCallbacks):
            callback_on_step_end_tensor_inputs = callback_on_step_end.tensor_inputs
        self.check_inputs(image, mask, target, guidance, classifier_input, callback_on_step_end_tensor_inputs)
        self._interrupt = False
        sched = self.scheduler
        x = image.repeat_interleave(num_images_per_prompt, 0)
        m = mask.to(x.dtype).expand(image.shape[0], 1, -1, -1).repeat_interleave(num_images_per_prompt, 0)
        if isinstance(generator, list) and len(generator) != x.shape[0]:
            raise ValueError(f"{len(generator)} generators for a batch of {x.shape[0]}")
        x1 = corrupt(x, m, generator)
        if getattr(self.bridge, "cond_x1", False):  # I2SB --cond-x1: the network also sees x1, as I2SB samples
            self.bridge.x1 = x1
        start = start_step if start_step is not None else max(1, round(start_fraction * sched.num_steps))
        sched.set_timesteps(num_inference_steps, start, device=x.device)
        steps = sched.timesteps.tolist()
        self._num_timesteps = len(steps) - 1  # bridge steps (each pair of timesteps)
        latents = sched.q_sample(steps[0], x, x1, ot_ode=True)
        stabilizer = AdamStabilizer()
        first_norm = None
        with self.progress_bar(total=len(steps) - 1) as progress_bar:
            for i, (n, n_prev) in enumerate(zip(steps[:-1], steps[1:], strict=True)):
                if self.interrupt:
                    break
                with torch.enable_grad():
                    xt = latents.detach().requires_grad_(guidance != "none")
                    eps = self.bridge(xt, n, m)
                    pred_original_sample = sched.pred_x0(n, xt, eps)
                    if guidance != "none":
                        source = pred_original_sample if guidance == "tweedie" else xt
                        logp = F.log_softmax(self.classifier(rescale_for_classifier(source, classifier_input)), 1)
                        grad = torch.autograd.grad(logp[:, target].sum(), xt)[0]
                pred_original_sample = pred_original_sample.detach()
                latents = xt.detach()
                if guidance != "none":
                    if stabilize:
                        grad = stabilizer(grad)
                        if first_norm is None:
                            first_norm = grad.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, 1, 1, 1)
                        grad = grad / first_norm
                    latents = latents + guidance_scale * grad
                latents = sched.posterior(n_prev, n, latents, pred_original_sample, ot_ode=True)
                latents = (1 - m) * x1 + m * latents
                if callback_on_step_end is not None:
                    tensors = {"latents": latents, "pred_original_sample": pred_original_sample, "x1": x1, "mask": m}
                    outputs = callback_on_step_end(self, i, n, {k: tensors[k] for k in callback_on_step_end_tensor_inputs})
                    if "latents" in (outputs or {}):
                        latents = (1 - m) * x1 + m * outputs["latents"]
                progress_bar.update()
        images = (1 - m) * x + m * latents.clamp(-1, 1)
        if output_type != "pt":
            images = ((images + 1) / 2).clamp(0, 1).permute(0, 2, 3, 1).float().cpu().numpy()
            if output_type == "pil":
                images = [PIL.Image.fromarray(a) for a in (images * 255).round().astype(np.uint8)]
        self.maybe_free_model_hooks()
        if not return_dict:
            return images, x1
        return RCSBOutput(images=images, x1=x1)
