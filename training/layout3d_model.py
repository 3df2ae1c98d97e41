"""Train the 3D Layout tab's embedded text- and box-depth-conditioned diffusion model.

    python -m training.layout3d_model --phase vae  --hours 0.3    # AutoencoderKL 64×64 ↔ 16×16×4
    python -m training.layout3d_model --phase unet --hours 1.5    # UNet + text encoder on the latents
    python -m training.layout3d_model --phase export              # fp16 diffusers folders → assets/

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

ROOT = Path(__file__).resolve().parents[1]


def _images(data) -> torch.Tensor:
    return torch.from_numpy(data["images"]).permute(0, 3, 1, 2).float() / 127.5 - 1.0


def _ema_update(ema, net, step, decay_max):
    with torch.no_grad():
        decay = min(decay_max, (1 + step) / (10 + step))
        for pe, p in zip(ema.parameters(), net.parameters(), strict=True):
            pe.mul_(decay).add_(p.detach(), alpha=1 - decay)


def train_vae(args) -> dict:
    data = cached_split("train", args.data_dir, args.limit)
    images = _images(data)
    vae = N.build_vae()
    opt = torch.optim.AdamW(vae.parameters(), lr=args.lr_vae, weight_decay=0.0)
    run = args.run_dir / "vae"
    run.mkdir(parents=True, exist_ok=True)
    step, elapsed = 0, 0.0
    if args.resume and (run / "state.pt").exists():
        st = torch.load(run / "state.pt", weights_only=False)
        vae.load_state_dict(st["vae"])
        opt.load_state_dict(st["opt"])
        step, elapsed = st["step"], st["elapsed"]
    gen = torch.Generator().manual_seed(args.seed + step)
    t0, last, losses = time.time() - elapsed, time.time(), []
    while time.time() - t0 < args.hours * 3600:
        idx = torch.randint(0, len(images), (args.batch,), generator=gen)
        x = images[idx]
        post = vae.encode(x).latent_dist
        z = post.sample(gen)
        rec = vae.decode(z).sample
        kl = post.kl().mean() / (x[0].numel())
        loss = F.l1_loss(rec, x) + F.mse_loss(rec, x) + args.kl_weight * kl
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(vae.parameters(), 1.0)
        opt.step()
        step += 1
        losses.append(loss.item())
        if step % 25 == 0:
            _log(run, f"vae step {step} loss {np.mean(losses[-25:]):.4f} elapsed {(time.time() - t0) / 60:.1f} min")
        if time.time() - last > args.checkpoint_minutes * 60:
            _save_vae(vae, opt, step, time.time() - t0, run, images)
            last = time.time()
    return _save_vae(vae, opt, step, time.time() - t0, run, images)


@torch.no_grad()
def _latent_std(vae, images) -> float:
    z = torch.cat([vae.encode(images[i:i + 128]).latent_dist.mean for i in range(0, min(len(images), 2048), 128)])
    return float(z.std())


def _save_vae(vae, opt, step, elapsed, run: Path, images) -> dict:
    torch.save({"vae": vae.state_dict(), "opt": opt.state_dict(), "step": step, "elapsed": elapsed}, run / "state.tmp")
    (run / "state.tmp").rename(run / "state.pt")
    vae.eval()
    std = _latent_std(vae, images)
    with torch.no_grad():
        x = images[-256:]
        rec = vae.decode(vae.encode(x).latent_dist.mean).sample.clamp(-1, 1)
        psnr = float(10 * torch.log10(4.0 / F.mse_loss(rec, x)))
    vae.train()
    vae.register_to_config(scaling_factor=1.0 / std)
    vae.save_pretrained(run / "model")
    info = {"steps": step, "minutes": round(elapsed / 60, 1), "latent_std": std, "recon_psnr_db": round(psnr, 2)}
    (run / "info.json").write_text(json.dumps(info, indent=1))
    _log(run, f"vae checkpoint {info}")
    return info


def _log(run: Path, msg: str) -> None:
    print(msg, flush=True)
    with open(run / "log.txt", "a") as f:
        f.write(msg + "\n")


@torch.no_grad()
def _encode_all(vae, images, batch=128) -> torch.Tensor:
    out = []
    for i in range(0, len(images), batch):
        x = images[i:i + batch]
        out.append(torch.stack([vae.encode(x).latent_dist.mean, vae.encode(x.flip(-1)).latent_dist.mean], 1))
    return torch.cat(out) * vae.config.scaling_factor  # N×2(flip)×4×16×16


def train_unet(args) -> dict:
    from diffusers import AutoencoderKL, DDPMScheduler

    run = args.run_dir / "unet"
    run.mkdir(parents=True, exist_ok=True)
    data = cached_split("train", args.data_dir, args.limit)
    vae = AutoencoderKL.from_pretrained(args.run_dir / "vae" / "model").eval()
    cache = run / f"latents_{len(data['images'])}.pt"
    if cache.exists():
        latents = torch.load(cache)
    else:
        latents = _encode_all(vae, _images(data))
        torch.save(latents, cache)
    depths = torch.from_numpy(data["depths"].astype(np.float32))[:, None]
    prompts = list(data["prompts"])
    tokenizer = N.build_tokenizer()
    ids = tokenizer(prompts, padding="max_length", max_length=N.MAX_TOKENS, truncation=True, return_tensors="pt").input_ids
    empty_ids = tokenizer([""], padding="max_length", max_length=N.MAX_TOKENS, return_tensors="pt").input_ids
    unet, text = N.build_unet(), N.build_text_encoder(len(tokenizer))
    ema_unet, ema_text = N.build_unet(), N.build_text_encoder(len(tokenizer))
    params = list(unet.parameters()) + list(text.parameters())
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=1e-2)
    sched = DDPMScheduler(**{k: v for k, v in N.SCHEDULER_CONFIG.items() if k != "set_alpha_to_one"})
    step, elapsed = 0, 0.0
    if args.resume and (run / "state.pt").exists():
        st = torch.load(run / "state.pt", weights_only=False)
        unet.load_state_dict(st["unet"])
        text.load_state_dict(st["text"])
        ema_unet.load_state_dict(st["ema_unet"])
        ema_text.load_state_dict(st["ema_text"])
        opt.load_state_dict(st["opt"])
        step, elapsed = st["step"], st["elapsed"]
        _log(run, f"resumed at step {step}")
    else:
        ema_unet.load_state_dict(unet.state_dict())
        ema_text.load_state_dict(text.state_dict())
    gen = torch.Generator().manual_seed(args.seed + step)
    t0, last, losses = time.time() - elapsed, time.time(), []
    while time.time() - t0 < args.hours * 3600:
        idx = torch.randint(0, len(latents), (args.batch,), generator=gen)
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
        for g in opt.param_groups:
            g["lr"] = args.lr * min(1.0, (step + 1) / 300)
        opt.step()
        _ema_update(ema_unet, unet, step, args.ema)
        _ema_update(ema_text, text, step, args.ema)
        step += 1
        losses.append(loss.item())
        if step % 25 == 0:
            _log(run, f"unet step {step} loss {np.mean(losses[-25:]):.4f} elapsed {(time.time() - t0) / 60:.1f} min")
        if time.time() - last > args.checkpoint_minutes * 60:
            _save_unet(run, unet, text, ema_unet, ema_text, opt, step, time.time() - t0, tokenizer, losses)
            last = time.time()
    return _save_unet(run, unet, text, ema_unet, ema_text, opt, step, time.time() - t0, tokenizer, losses)


def _save_unet(run, unet, text, ema_unet, ema_text, opt, step, elapsed, tokenizer, losses) -> dict:
    torch.save({"unet": unet.state_dict(), "text": text.state_dict(), "ema_unet": ema_unet.state_dict(),
                "ema_text": ema_text.state_dict(), "opt": opt.state_dict(), "step": step, "elapsed": elapsed},
               run / "state.tmp")
    (run / "state.tmp").rename(run / "state.pt")
    ema_unet.save_pretrained(run / "model" / "unet")
    ema_text.save_pretrained(run / "model" / "text_encoder")
    tokenizer.save_pretrained(run / "model" / "tokenizer")
    info = {"steps": step, "minutes": round(elapsed / 60, 1), "final_loss": float(np.mean(losses[-200:])) if losses else None}
    (run / "info.json").write_text(json.dumps(info, indent=1))
    _log(run, f"unet checkpoint {info}")
    return info


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
    info = {"vae": json.loads((args.run_dir / "vae" / "info.json").read_text()),
            "unet": json.loads((args.run_dir / "unet" / "info.json").read_text())}
    (out / "training.json").write_text(json.dumps(info, indent=1))
    return info


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--phase", choices=("vae", "unet", "export"), required=True)
    p.add_argument("--hours", type=float, default=1.5)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=4e-4)
    p.add_argument("--lr-vae", type=float, default=1e-3)
    p.add_argument("--kl-weight", type=float, default=1e-4)
    p.add_argument("--uncond-p", type=float, default=0.1)
    p.add_argument("--ema", type=float, default=0.999)
    p.add_argument("--limit", type=int, default=None, help="use only the first N training scenes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--checkpoint-minutes", type=float, default=5.0)
    p.add_argument("--resume", action="store_true")
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
