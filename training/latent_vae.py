"""Shared parts of the embedded latent-diffusion trainings (3D Layout, Text in Image).

* :func:`train_vae` — a small ``AutoencoderKL`` on a domain's images (L1 + MSE + a weak KL),
  checkpointed every few minutes, resumable; the saved model's ``scaling_factor`` is 1 / the std of
  its latents, as SD does, so the UNet sees unit-variance latents. With ``freeze_encoder`` only the
  decoder learns (fine-tuning a shipped VAE for sharper decodes): the latents, their scaling and any
  UNet trained on them stay valid;
* :func:`ema_update`, :func:`log_line` and the UNet + text-encoder checkpoint
  (:func:`save_unet_checkpoint` / :func:`resume_unet_checkpoint`) that both UNet phases share.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F


def log_line(run: Path, msg: str) -> None:
    print(msg, flush=True)
    with open(run / "log.txt", "a") as f:
        f.write(msg + "\n")


def ema_update(ema, net, step: int, decay_max: float) -> None:
    with torch.no_grad():
        decay = min(decay_max, (1 + step) / (10 + step))
        for pe, p in zip(ema.parameters(), net.parameters(), strict=True):
            pe.mul_(decay).add_(p.detach(), alpha=1 - decay)


def images_to_tensor(images: np.ndarray) -> torch.Tensor:
    """N×H×W×3 uint8 → N×3×H×W float in [-1, 1]."""
    return torch.from_numpy(images).permute(0, 3, 1, 2).float() / 127.5 - 1.0


def train_vae(build_vae: Callable, images: torch.Tensor, run: Path, *, hours: float, batch: int, lr: float,
              kl_weight: float, seed: int, checkpoint_minutes: float, resume: bool, max_steps: int | None = None,
              freeze_encoder: bool = False) -> dict:
    """Train ``build_vae()`` on ``images`` (N×3×H×W in [-1, 1]) for ``hours`` (or ``max_steps``); save to ``run``."""
    vae = build_vae()
    if freeze_encoder:
        vae.encoder.requires_grad_(False)
        vae.quant_conv.requires_grad_(False)
    opt = torch.optim.AdamW([p for p in vae.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    run.mkdir(parents=True, exist_ok=True)
    step, elapsed = 0, 0.0
    if resume and (run / "state.pt").exists():
        st = torch.load(run / "state.pt", weights_only=False)
        vae.load_state_dict(st["vae"])
        opt.load_state_dict(st["opt"])
        step, elapsed = st["step"], st["elapsed"]
    gen = torch.Generator().manual_seed(seed + step)
    t0, last, losses = time.time() - elapsed, time.time(), []
    while time.time() - t0 < hours * 3600 and (max_steps is None or step < max_steps):
        idx = torch.randint(0, len(images), (batch,), generator=gen)
        x = images[idx]
        with torch.set_grad_enabled(not freeze_encoder):
            post = vae.encode(x).latent_dist
        z = post.sample(gen)
        rec = vae.decode(z).sample
        kl = post.kl().mean() / (x[0].numel())
        loss = F.l1_loss(rec, x) + F.mse_loss(rec, x) + kl_weight * kl
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(vae.parameters(), 1.0)
        opt.step()
        step += 1
        losses.append(loss.item())
        if step % 25 == 0:
            log_line(run, f"vae step {step} loss {np.mean(losses[-25:]):.4f} elapsed {(time.time() - t0) / 60:.1f} min")
        if time.time() - last > checkpoint_minutes * 60:
            save_vae(vae, opt, step, time.time() - t0, run, images, rescale=not freeze_encoder)
            last = time.time()
    return save_vae(vae, opt, step, time.time() - t0, run, images, rescale=not freeze_encoder)


@torch.no_grad()
def latent_std(vae, images: torch.Tensor) -> float:
    z = torch.cat([vae.encode(images[i:i + 128]).latent_dist.mean for i in range(0, min(len(images), 2048), 128)])
    return float(z.std())


def save_vae(vae, opt, step: int, elapsed: float, run: Path, images: torch.Tensor, rescale: bool = True) -> dict:
    """Checkpoint and ``run/model``; ``rescale`` sets ``scaling_factor`` anew (not when the encoder was frozen)."""
    torch.save({"vae": vae.state_dict(), "opt": opt.state_dict(), "step": step, "elapsed": elapsed}, run / "state.tmp")
    (run / "state.tmp").rename(run / "state.pt")
    vae.eval()
    std = latent_std(vae, images) if rescale else 1.0 / vae.config.scaling_factor
    with torch.no_grad():
        x = images[-256:]
        rec = vae.decode(vae.encode(x).latent_dist.mean).sample.clamp(-1, 1)
        psnr = float(10 * torch.log10(4.0 / F.mse_loss(rec, x)))
    vae.train()
    if rescale:
        vae.register_to_config(scaling_factor=1.0 / std)
    vae.save_pretrained(run / "model")
    info = {"steps": step, "minutes": round(elapsed / 60, 1), "latent_std": std, "recon_psnr_db": round(psnr, 2)}
    (run / "info.json").write_text(json.dumps(info, indent=1))
    log_line(run, f"vae checkpoint {info}")
    return info


def resume_unet_checkpoint(run: Path, unet, text, ema_unet, ema_text, opt) -> tuple[int, float]:
    """Load ``run/state.pt`` into the modules; (step, elapsed seconds) — (0, 0) and EMA = weights when absent."""
    if not (run / "state.pt").exists():
        ema_unet.load_state_dict(unet.state_dict())
        ema_text.load_state_dict(text.state_dict())
        return 0, 0.0
    st = torch.load(run / "state.pt", weights_only=False)
    unet.load_state_dict(st["unet"])
    text.load_state_dict(st["text"])
    ema_unet.load_state_dict(st["ema_unet"])
    ema_text.load_state_dict(st["ema_text"])
    opt.load_state_dict(st["opt"])
    log_line(run, f"resumed at step {st['step']}")
    return st["step"], st["elapsed"]


def save_unet_checkpoint(run, unet, text, ema_unet, ema_text, opt, step, elapsed, tokenizer, losses) -> dict:
    """Training state (resumable) plus the EMA weights as diffusers/transformers folders under ``run/model``."""
    torch.save({"unet": unet.state_dict(), "text": text.state_dict(), "ema_unet": ema_unet.state_dict(),
                "ema_text": ema_text.state_dict(), "opt": opt.state_dict(), "step": step, "elapsed": elapsed},
               run / "state.tmp")
    (run / "state.tmp").rename(run / "state.pt")
    ema_unet.save_pretrained(run / "model" / "unet")
    ema_text.save_pretrained(run / "model" / "text_encoder")
    tokenizer.save_pretrained(run / "model" / "tokenizer")
    info = {"steps": step, "minutes": round(elapsed / 60, 1),
            "final_loss": float(np.mean(losses[-200:])) if losses else None}
    (run / "info.json").write_text(json.dumps(info, indent=1))
    log_line(run, f"unet checkpoint {info}")
    return info
