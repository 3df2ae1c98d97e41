"""Train the 3D Layout tab's embedded text- and box-depth-conditioned diffusion model.

    python -m training.layout3d_model --phase vae  --hours 0.3    # AutoencoderKL 64×64 ↔ 16×16×4
    python -m training.layout3d_model --phase unet --hours 1.5    # UNet + text encoder on the latents
    python -m training.layout3d_model --phase export              # fp16 diffusers folders → assets/

Further training of a shipped model starts from its exported folder (``--init-from``): the VAE with
its encoder frozen (``--freeze-encoder``: only the decoder sharpens, the latent space stays), the UNet
and text encoder from their EMA weights, the EMA continuing at the decay the shipped run had reached.

Data: ``backends.layout3d.data`` (open3d renders of the primitive world; box depth as condition,
real primitives in the image; scene / single-object / whole-layout prompts). The UNet learns
ε-prediction on SD's noise schedule with 10% empty prompts for classifier-free guidance. Both
phases checkpoint to ``training/runs/layout3d`` every few minutes and resume from there.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from backends.common.seeding import seed_everything
from backends.layout3d import networks as N
from backends.layout3d.data import cached_split
from training import latent_vae
from training.asset_files import drop_name_or_path
from training.latent_vae import images_to_tensor

ROOT = Path(__file__).resolve().parents[1]


def prior_training(src: Path | None, phase: str) -> dict | None:
    """What the exported model at ``src`` was trained for in ``phase`` (its ``training.json``), or None."""
    return json.loads((src / "training.json").read_text())[phase] if src else None


def _with_prior(info: dict, prior: dict | None, run: Path, **settings) -> dict:
    """A phase's record (``run/info.json``); a warm-started one also keeps the run it continued and the totals."""
    if prior is None:
        return info
    info = {**info, **settings, "warm_start": prior,
            "total_steps": prior.get("total_steps", prior["steps"]) + info["steps"],
            "total_minutes": round(prior.get("total_minutes", prior["minutes"]) + info["minutes"], 1)}
    (run / "info.json").write_text(json.dumps(info, indent=1))
    return info


def train_vae(args) -> dict:
    from diffusers import AutoencoderKL

    data = cached_split("train", args.data_dir, args.limit)
    build = N.build_vae
    if args.init_from:
        def build():
            return AutoencoderKL.from_pretrained(args.init_from / "vae").float()
    run = args.run_dir / "vae"
    info = latent_vae.train_vae(build, images_to_tensor(data["images"]), run, hours=args.hours,
                                batch=args.batch, lr=args.lr_vae, kl_weight=args.kl_weight, seed=args.seed,
                                checkpoint_minutes=args.checkpoint_minutes, resume=args.resume,
                                max_steps=args.max_steps, freeze_encoder=args.freeze_encoder)
    return _with_prior(info, prior_training(args.init_from, "vae"), run, lr=args.lr_vae,
                       frozen_encoder=args.freeze_encoder)


@torch.no_grad()
def warm_start(unet, text, src: Path) -> None:
    """The UNet and text encoder of an exported model (fp16 on disk, fp32 here)."""
    from diffusers import UNet2DConditionModel
    from transformers import CLIPTextModel

    unet.load_state_dict(UNet2DConditionModel.from_pretrained(src / "unet").state_dict())
    text.load_state_dict(CLIPTextModel.from_pretrained(src / "text_encoder").state_dict())


@torch.no_grad()
def _encode_all(vae, images, batch=128) -> torch.Tensor:
    out = []
    for i in range(0, len(images), batch):
        x = images[i:i + batch]
        out.append(torch.stack([vae.encode(x).latent_dist.mean, vae.encode(x.flip(-1)).latent_dist.mean], 1))
    return torch.cat(out) * vae.config.scaling_factor  # N×2(flip)×4×16×16


def _cached_latents(vae, data: dict, cache: Path) -> torch.Tensor:
    if cache.exists():
        return torch.load(cache)
    latents = _encode_all(vae, images_to_tensor(data["images"]))
    torch.save(latents, cache)
    return latents


def train_unet(args) -> dict:
    from diffusers import AutoencoderKL, DDPMScheduler

    run = args.run_dir / "unet"
    run.mkdir(parents=True, exist_ok=True)
    data = cached_split("train", args.data_dir, args.limit)
    vae_dir = args.run_dir / "vae" / "model"
    if args.init_from and not vae_dir.exists():  # a decoder-only fine-tune keeps the encoder, so either will do
        vae_dir = args.init_from / "vae"
    vae = AutoencoderKL.from_pretrained(vae_dir).float().eval()
    latents = _cached_latents(vae, data, run / f"latents_{len(data['images'])}.pt")
    depths = torch.from_numpy(data["depths"].astype(np.float32))[:, None]
    prompts = list(data["prompts"])
    n_plain = len(latents)
    if args.crowded_p > 0:  # occluded three-object scenes, drawn with probability crowded_p
        crowd = cached_split("crowded", args.data_dir, args.limit)
        latents = torch.cat([latents, _cached_latents(vae, crowd, run / f"latents_crowded_{len(crowd['images'])}.pt")])
        depths = torch.cat([depths, torch.from_numpy(crowd["depths"].astype(np.float32))[:, None]])
        prompts += list(crowd["prompts"])
    tokenizer = N.build_tokenizer()
    ids = tokenizer(prompts, padding="max_length", max_length=N.MAX_TOKENS, truncation=True, return_tensors="pt").input_ids
    empty_ids = tokenizer([""], padding="max_length", max_length=N.MAX_TOKENS, return_tensors="pt").input_ids
    unet, text = N.build_unet(), N.build_text_encoder(len(tokenizer))
    ema_unet, ema_text = N.build_unet(), N.build_text_encoder(len(tokenizer))
    prior = prior_training(args.init_from, "unet")
    if prior and not (args.resume and (run / "state.pt").exists()):
        warm_start(unet, text, args.init_from)
    ema_offset = prior.get("total_steps", prior["steps"]) if prior else 0  # the EMA decay goes on where it was
    params = list(unet.parameters()) + list(text.parameters())
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=1e-2)
    sched = DDPMScheduler(**{k: v for k, v in N.SCHEDULER_CONFIG.items() if k != "set_alpha_to_one"})
    step, elapsed = (latent_vae.resume_unet_checkpoint(run, unet, text, ema_unet, ema_text, opt) if args.resume
                     else (0, 0.0))
    if step == 0:
        ema_unet.load_state_dict(unet.state_dict())
        ema_text.load_state_dict(text.state_dict())
    gen = torch.Generator().manual_seed(args.seed + step)
    t0, last, losses = time.time() - elapsed, time.time(), []
    while time.time() - t0 < args.hours * 3600 and (args.max_steps is None or step < args.max_steps):
        idx = torch.randint(0, n_plain, (args.batch,), generator=gen)
        if len(latents) > n_plain:
            crowded = torch.rand(args.batch, generator=gen) < args.crowded_p
            idx[crowded] = torch.randint(n_plain, len(latents), (int(crowded.sum()),), generator=gen)
        flip = torch.randint(0, 2, (args.batch,), generator=gen)
        z0 = latents[idx, flip]
        d = depths[idx]
        d = torch.where(flip.view(-1, 1, 1, 1).bool(), d.flip(-1), d)
        tok = ids[idx].clone()
        drop = torch.rand(args.batch, generator=gen) < args.uncond_p
        tok[drop] = empty_ids[0]
        noise = torch.randn(z0.shape, generator=gen)
        t = torch.randint(0, sched.config.num_train_timesteps, (args.batch,), generator=gen)
        zt = sched.add_noise(z0, noise, t)
        cond = text(tok)[0]
        pred = unet(torch.cat([zt, N.depth_channels(d)], 1), t, encoder_hidden_states=cond).sample
        loss = F.mse_loss(pred, noise)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        decay = 1.0 - (time.time() - t0) / (args.hours * 3600) if args.lr_decay else 1.0
        for g in opt.param_groups:
            g["lr"] = args.lr * min(1.0, (step + 1) / 300) * max(decay, 0.0)
        opt.step()
        latent_vae.ema_update(ema_unet, unet, ema_offset + step, args.ema)
        latent_vae.ema_update(ema_text, text, ema_offset + step, args.ema)
        step += 1
        losses.append(loss.item())
        if step % 25 == 0:
            latent_vae.log_line(run, f"unet step {step} loss {np.mean(losses[-25:]):.4f} elapsed {(time.time() - t0) / 60:.1f} min")
        if time.time() - last > args.checkpoint_minutes * 60:
            latent_vae.save_unet_checkpoint(run, unet, text, ema_unet, ema_text, opt, step, time.time() - t0, tokenizer, losses)
            last = time.time()
    info = latent_vae.save_unet_checkpoint(run, unet, text, ema_unet, ema_text, opt, step, time.time() - t0, tokenizer, losses)
    return _with_prior(info, prior, run, lr=args.lr, lr_decay=args.lr_decay, crowded_p=args.crowded_p)


def export(args) -> dict:
    """fp16 copies of the EMA weights as one diffusers-style folder (loaded back in fp32)."""
    from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
    from transformers import CLIPTextModel, PreTrainedTokenizerFast

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    src = args.run_dir / "unet" / "model"
    AutoencoderKL.from_pretrained(args.run_dir / "vae" / "model").to(torch.float16).save_pretrained(out / "vae")
    UNet2DConditionModel.from_pretrained(src / "unet").to(torch.float16).save_pretrained(out / "unet")
    CLIPTextModel.from_pretrained(src / "text_encoder").to(torch.float16).save_pretrained(out / "text_encoder")
    PreTrainedTokenizerFast.from_pretrained(src / "tokenizer").save_pretrained(out / "tokenizer")
    DDIMScheduler(**N.SCHEDULER_CONFIG).save_pretrained(out / "scheduler")
    drop_name_or_path(out)
    info = {"vae": json.loads((args.run_dir / "vae" / "info.json").read_text()),
            "unet": json.loads((args.run_dir / "unet" / "info.json").read_text())}
    (out / "training.json").write_text(json.dumps(info, indent=1))
    return info


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--phase", choices=("vae", "unet", "export"), required=True)
    p.add_argument("--hours", type=float, default=1.5)
    p.add_argument("--max-steps", type=int, default=None,
                   help="stop after this many steps (in all, with --resume) even within --hours (tests: a fixed count)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=4e-4)
    p.add_argument("--lr-vae", type=float, default=1e-3)
    p.add_argument("--kl-weight", type=float, default=1e-4)
    p.add_argument("--uncond-p", type=float, default=0.1)
    p.add_argument("--ema", type=float, default=0.999)
    p.add_argument("--limit", type=int, default=None, help="use only the first N training (and crowded) scenes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--checkpoint-minutes", type=float, default=5.0)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--init-from", type=Path, default=None,
                   help="an exported model folder (e.g. assets/layout3d-embedded) to continue training from "
                        "instead of random weights (unless --resume finds a checkpoint)")
    p.add_argument("--freeze-encoder", action="store_true",
                   help="vae phase: train only the decoder, so the latents (and a UNet trained on them) stay valid")
    p.add_argument("--lr-decay", action="store_true",
                   help="unet phase: decay the learning rate linearly to zero over --hours")
    p.add_argument("--crowded-p", type=float, default=0.0,
                   help="share of each UNet batch drawn from the crowded split (occluded three-object scenes)")
    p.add_argument("--data-dir", type=Path, default=ROOT / "training" / "data")
    p.add_argument("--run-dir", type=Path, default=ROOT / "training" / "runs" / "layout3d")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "layout3d-embedded")
    args = p.parse_args(argv)
    seed_everything(args.seed)
    torch.set_num_threads(args.threads)
    result = {"vae": train_vae, "unet": train_unet, "export": export}[args.phase](args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
