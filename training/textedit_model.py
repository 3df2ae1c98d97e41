"""Train the Text in Image tab's embedded text-to-image model (words on signs, shirts, walls, labels).

    python -m training.textedit_model --phase vae  --hours 0.3 --run-dir RUN   # AutoencoderKL 32×128 ↔ 8×32×4
    python -m training.textedit_model --phase unet --hours 1.6 --run-dir RUN   # UNet + char-level text encoder
    python -m training.textedit_model --phase eval --run-dir RUN               # OCR of generated held-out words
    python -m training.textedit_model --phase export --run-dir RUN             # fp16 pipeline → assets/

Data: ``backends.textedit.data`` (PIL renders of training words in six Debian fonts on six
templates; the held-out words never appear). The UNet learns ε-prediction on SD's noise schedule
with min-SNR loss weighting and 10% empty prompts for classifier-free guidance; EMA weights are
what ships. Each phase checkpoints to the run folder every few minutes and resumes from there
(``--resume``); ``--hours`` caps the wall time of a phase (counting earlier resumed time).
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
from backends.textedit import networks as N
from backends.textedit.data import DEFAULT_STYLE, STYLES, cached_training_set
from training.asset_files import drop_name_or_path
from training.latent_vae import (
    ema_update,
    images_to_tensor,
    log_line,
    resume_unet_checkpoint,
    save_unet_checkpoint,
    train_vae,
)

ROOT = Path(__file__).resolve().parents[1]


def phase_vae(args) -> dict:
    data = cached_training_set(args.data_dir, args.n_train, style=args.vae_data_style)
    overrides = json.loads(args.vae_overrides)
    return train_vae(lambda: N.build_vae(**overrides), images_to_tensor(data["images"]), args.run_dir / "vae", hours=args.hours,
                     batch=args.batch_vae, lr=args.lr_vae, kl_weight=args.kl_weight, seed=args.seed,
                     checkpoint_minutes=args.checkpoint_minutes, resume=args.resume, max_steps=args.max_steps)


@torch.no_grad()
def _encode_all(vae, images: torch.Tensor, batch: int = 128) -> torch.Tensor:
    z = [vae.encode(images[i:i + batch]).latent_dist.mean for i in range(0, len(images), batch)]
    return torch.cat(z) * vae.config.scaling_factor


def _min_snr_weights(sched, t: torch.Tensor, gamma: float) -> torch.Tensor:
    """min(SNR, γ) / SNR per sample (Hang et al. 2023): faster convergence of ε-prediction."""
    ac = sched.alphas_cumprod[t]
    snr = ac / (1 - ac)
    return torch.clamp(snr, max=gamma) / snr


def text_region_weights(boxes: torch.Tensor, shape: tuple[int, int], weight: float) -> torch.Tensor:
    """B×1×h×w loss weights: ``1 + weight`` on the latent cells the word's box (image pixels) touches, 1
    elsewhere, scaled to mean 1 per sample. The letters are a small part of the image but all of what the
    prompt's characters decide, so this puts more of the loss where the text → glyph path is learned."""
    h, w = shape
    b = boxes.long()
    fy, fx = N.IMAGE_SIZE[0] // h, N.IMAGE_SIZE[1] // w
    rows, cols = torch.arange(h)[None, :], torch.arange(w)[None, :]
    inside_r = (rows >= b[:, 1:2] // fy) & (rows <= (b[:, 3:4] - 1) // fy)
    inside_c = (cols >= b[:, 0:1] // fx) & (cols <= (b[:, 2:3] - 1) // fx)
    maps = 1 + weight * (inside_r[:, :, None] & inside_c[:, None, :]).float()
    return (maps / maps.mean(dim=(1, 2), keepdim=True))[:, None]


def phase_unet(args) -> dict:
    from diffusers import AutoencoderKL

    run = args.run_dir / "unet"
    run.mkdir(parents=True, exist_ok=True)
    data = cached_training_set(args.data_dir, args.n_train, style=args.data_style)
    n = min(args.n_latents or args.n_train, args.n_train)
    data = {k: v[:n] for k, v in data.items()}
    boxes = torch.from_numpy(data["boxes"].astype(np.int64))
    cache = run / f"latents_{n}.pt"
    if cache.exists():
        latents = torch.load(cache)
    else:
        vae = AutoencoderKL.from_pretrained(args.run_dir / "vae" / "model").eval()
        latents = _encode_all(vae, images_to_tensor(data["images"]))
        torch.save(latents, cache)
        del vae
    tokenizer = N.build_tokenizer()
    ids = tokenizer(list(data["prompts"]), padding="max_length", max_length=N.MAX_TOKENS, truncation=True,
                    return_tensors="pt").input_ids
    empty_ids = tokenizer([""], padding="max_length", max_length=N.MAX_TOKENS, return_tensors="pt").input_ids
    overrides, text_overrides = json.loads(args.unet_overrides), json.loads(args.text_overrides)
    unet, text = N.build_unet(**overrides), N.build_text_encoder(len(tokenizer), **text_overrides)
    ema_unet, ema_text = N.build_unet(**overrides), N.build_text_encoder(len(tokenizer), **text_overrides)
    quote = tokenizer.convert_tokens_to_ids('"')
    positions = N.position_ids(ids, quote) if N.uses_character_positions(text) else None
    if args.init_from and not (args.resume and (run / "state.pt").exists()):
        warm_start(unet, text, args.init_from, ids, quote)
    params = list(unet.parameters()) + list(text.parameters())
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=1e-2)
    sched = N.build_scheduler("ddpm")
    step, elapsed = resume_unet_checkpoint(run, unet, text, ema_unet, ema_text, opt) if args.resume else (0, 0.0)
    if step == 0:
        ema_unet.load_state_dict(unet.state_dict())
        ema_text.load_state_dict(text.state_dict())
    gen = torch.Generator().manual_seed(args.seed + step)
    t0, last, losses = time.time() - elapsed, time.time(), []
    while time.time() - t0 < args.hours * 3600 and (args.max_steps is None or step < args.max_steps):
        idx = torch.randint(0, len(latents), (args.batch,), generator=gen)
        z0 = latents[idx]
        tok = ids[idx].clone()
        drop = torch.rand(args.batch, generator=gen) < args.uncond_p
        tok[drop] = empty_ids[0]
        pos = None
        if positions is not None:  # the empty prompt has no quotes: plain positions
            pos = positions[idx].clone()
            pos[drop] = torch.arange(N.MAX_TOKENS)
        noise = torch.randn(z0.shape, generator=gen)
        t = torch.randint(0, sched.config.num_train_timesteps, (args.batch,), generator=gen)
        pred = unet(N.unet_input(unet, sched.add_noise(z0, noise, t)), t, encoder_hidden_states=text(tok, position_ids=pos)[0]).sample
        err = F.mse_loss(pred, noise, reduction="none")
        if args.text_weight:
            err = err * text_region_weights(boxes[idx], err.shape[-2:], args.text_weight)
        per_sample = err.mean(dim=(1, 2, 3))
        loss = (per_sample * _min_snr_weights(sched, t, args.snr_gamma)).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        for g in opt.param_groups:
            g["lr"] = args.lr * min(1.0, (step + 1) / 200)
        opt.step()
        ema_update(ema_unet, unet, step, args.ema)
        ema_update(ema_text, text, step, args.ema)
        step += 1
        losses.append(per_sample.mean().item())
        if step % 25 == 0:
            log_line(run, f"unet step {step} loss {np.mean(losses[-25:]):.4f} elapsed {(time.time() - t0) / 60:.1f} min")
        if time.time() - last > args.checkpoint_minutes * 60:
            save_unet_checkpoint(run, unet, text, ema_unet, ema_text, opt, step, time.time() - t0, tokenizer, losses)
            last = time.time()
    return save_unet_checkpoint(run, unet, text, ema_unet, ema_text, opt, step, time.time() - t0, tokenizer, losses)


@torch.no_grad()
def warm_start(unet, text, src: Path, ids: torch.Tensor, quote: int) -> None:
    """Start from another run's EMA weights (``src/unet/model``): the UNet as it is, the text encoder's
    matching tensors, and — when this encoder takes character positions and ``src``'s did not — each
    character position initialised to the plain position letter i most often had in ``src``'s prompts."""
    from diffusers import UNet2DConditionModel
    from transformers import CLIPTextModel

    unet.load_state_dict(UNet2DConditionModel.from_pretrained(src / "unet" / "model" / "unet").state_dict())
    old = CLIPTextModel.from_pretrained(src / "unet" / "model" / "text_encoder").state_dict()
    new = text.state_dict()
    key = next(k for k in new if k.endswith("position_embedding.weight"))
    for name, value in old.items():
        if name in new and new[name].shape == value.shape:
            new[name] = value
    if new[key].shape[0] > old[key].shape[0]:
        n_old = old[key].shape[0]
        new[key][:n_old] = old[key]
        first_char = int(torch.mode((ids == quote).float().argmax(dim=1)).values) + 1
        for i in range(n_old, new[key].shape[0]):
            new[key][i] = old[key][min(first_char + i - N.MAX_TOKENS, n_old - 1)]
    text.load_state_dict(new)


def export(args) -> dict:
    """fp16 weights (EMA, or ``--weights raw``) saved by ``TextEditPipeline.save_pretrained`` (model_index.json +
    component folders)."""
    from backends.textedit.pipeline import TextEditPipeline
    from training.textedit_eval import load_run_model

    vae, unet, text, tok, sched = load_run_model(args.run_dir, args.weights)
    pipe = TextEditPipeline(vae=vae.to(torch.float16), text_encoder=text.to(torch.float16), tokenizer=tok,
                            unet=unet.to(torch.float16), scheduler=sched)
    args.out.mkdir(parents=True, exist_ok=True)
    pipe.save_pretrained(args.out, safe_serialization=True)
    drop_name_or_path(args.out)
    info = {"vae": json.loads((args.run_dir / "vae" / "info.json").read_text()),
            "unet": json.loads((args.run_dir / "unet" / "info.json").read_text())}
    info["unet"]["weights"] = args.weights
    (args.out / "training.json").write_text(json.dumps(info, indent=1))
    evaluation = args.run_dir / ("eval" if args.weights == "ema" else f"eval-{args.weights}") / "metrics.json"
    if evaluation.exists():  # the card's numbers: the eval phase's result on the exported weights
        metrics = json.loads(evaluation.read_text())
        if metrics["unet_steps"] != info["unet"]["steps"]:
            raise SystemExit(f"eval/metrics.json is of step {metrics['unet_steps']}, the checkpoint is at step "
                             f"{info['unet']['steps']}: run --phase eval first")
        (args.out / "metrics.json").write_text(json.dumps({"training": info, **metrics}, indent=1))
    return info


def _evaluate(args) -> dict:
    from training.textedit_eval import evaluate

    return evaluate(args)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--phase", choices=("vae", "unet", "eval", "export"), required=True)
    p.add_argument("--hours", type=float, default=1.6, help="wall-time cap of the phase")
    p.add_argument("--max-steps", type=int, default=None, help="stop after this many steps (tests)")
    p.add_argument("--n-train", type=int, default=30000, help="rendered training images")
    p.add_argument("--data-style", choices=tuple(STYLES), default=DEFAULT_STYLE,
                   help="how the UNet's training words are drawn (backends.textedit.data.STYLES)")
    p.add_argument("--vae-data-style", choices=tuple(STYLES), default="fonts6",
                   help="the VAE's training images (the shipped VAE learned the six-font renders; it "
                        "reconstructs the mono ones as well: 64/64 held-out words read by RapidOCR)")
    p.add_argument("--n-latents", type=int, default=10000,
                   help="the UNet trains on the first N images (encoding all of them costs minutes per 10k on a CPU)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--batch-vae", type=int, default=16)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--lr-vae", type=float, default=1e-3)
    p.add_argument("--kl-weight", type=float, default=1e-4)
    p.add_argument("--uncond-p", type=float, default=0.1)
    p.add_argument("--snr-gamma", type=float, default=5.0)
    p.add_argument("--ema", type=float, default=0.999)
    p.add_argument("--text-weight", type=float, default=0.0,
                   help="extra loss weight on the latent cells of the word's box (0 = plain MSE; the shipped model: 4)")
    p.add_argument("--unet-overrides", default="{}", help="JSON overrides of UNET_CONFIG (tests use tiny ones)")
    p.add_argument("--text-overrides", default="{}",
                   help='JSON overrides of TEXT_CONFIG; \'{"max_position_embeddings": 64}\' gives the quoted '
                        "characters their index in the word as position ids (networks.position_ids)")
    p.add_argument("--init-from", type=Path, default=None,
                   help="start the UNet phase from another run's EMA weights (RUN/unet/model) instead of random")
    p.add_argument("--vae-overrides", default="{}", help="JSON overrides of VAE_CONFIG (tests use tiny ones)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--checkpoint-minutes", type=float, default=10.0)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--eval-steps", type=int, default=20, help="DDIM steps of the eval phase")
    p.add_argument("--eval-guidance", type=float, default=5.0, help="the tab's default")
    p.add_argument("--weights", choices=("ema", "raw"), default="ema",
                   help="which weights of the last checkpoint the eval and export phases use")
    p.add_argument("--eval-words", type=int, default=None, help="evaluate only the first N held-out words")
    p.add_argument("--data-dir", type=Path, default=ROOT / "training" / "data")
    p.add_argument("--run-dir", type=Path, default=ROOT / "training" / "runs" / "textedit")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "textedit-embedded")
    args = p.parse_args(argv)
    seed_everything(args.seed)
    torch.set_num_threads(args.threads)
    result = {"vae": phase_vae, "unet": phase_unet, "eval": _evaluate, "export": export}[args.phase](args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
