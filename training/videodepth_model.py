"""Train the Video Depth tab's embedded Depth Any Video denoiser on synthetic clips (CPU).

    python -m training.videodepth_model --run-dir RUN --hours 1.5            # train (resumes with --resume)
    python -m training.videodepth_model --run-dir RUN --phase export         # EMA → assets/, measured card data

Data: ``backends.videodepth.data`` (rendered primitive-world clips with exact depth). Each step takes 16
frames split as B clips × F frames with F ∈ {1, 2, 4, 8, 16} (mixed durations: single images to long
clips; ``--frames-per-step 24`` and a sixth ``--duration-p`` value add whole 24-frame clips), random
strides, and frame positions scaled by a random frame-rate factor and offset (the RoPE sees sparse, far-
apart indices as it will for key frames). The model denoises the space-to-depth disparity latent
concatenated with the RGB latent; flow matching x_σ = (1−σ)·x0 + σ·ε, target v = ε − x0, σ uniform with
a quarter of the steps at σ = 1 (the first, most important step of a 1–3-step Euler sampler). AdamW,
EMA, checkpoints and a loss log in ``--run-dir``; every checkpoint is evaluated (AbsRel after a per-
video scale-and-shift fit) on held-out clips.

Temporal consistency (flags; the defaults reproduce the shipped recipe, which has none of them):
``--temporal-weight`` adds a temporal-gradient-matching loss (Video Depth Anything, CVPR 2025) on
clips of more than one frame: the L1 distance between the predicted frame-to-frame change of the
clean disparity latent and the true change, so errors that differ from frame to frame (flicker) cost
more than errors shared by the clip. ``--duration-p`` re-weights the clip lengths (single frames
teach the temporal layers nothing). ``--zero-start-p`` gives that share of the σ = 1 samples the
zero latent instead of noise — the pipeline's default start (``initial_noise="zero"``), so the
first Euler step is trained on exactly what inference feeds it.
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
from backends.videodepth import networks as N
from backends.videodepth.data import cached_clips, sample_windows
from backends.videodepth.metrics import evaluate_clip
from training.asset_files import drop_name_or_path

ROOT = Path(__file__).resolve().parents[1]
DURATIONS = (1, 2, 4, 8, 16, 24)  # 24: a whole training clip (needs --frames-per-step 24)
DURATION_P = (0.15, 0.1, 0.2, 0.25, 0.3)  # five values: no 24-frame clips (the recipe of the first phases)
RATE_FACTORS = (1, 1, 2, 4, 8)


def encode_batch(codec, rgb: np.ndarray, disp: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """uint8 RGB (B×F×H×W×3) and disparity in [-1, 1] (B×F×H×W) → latents B×F×C×h×w."""
    b, f = rgb.shape[:2]
    x = torch.from_numpy(np.ascontiguousarray(rgb)).float().div(127.5).sub(1).permute(0, 1, 4, 2, 3).flatten(0, 1)
    d = torch.from_numpy(np.ascontiguousarray(disp)).float()[:, :, None].expand(-1, -1, 3, -1, -1).flatten(0, 1)
    s = codec.config.scaling_factor
    zr = codec.encode(x).latent_dist.mode() * s
    zd = codec.encode(d).latent_dist.mode() * s
    return zd.unflatten(0, (b, f)), zr.unflatten(0, (b, f))


def temporal_gradient_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Temporal gradient matching: mean |(x̂_{t+1} − x̂_t) − (x_{t+1} − x_t)| over B×F×… clips (0 when F = 1).

    Zero for any prediction whose error is the same in every frame; positive when the prediction changes
    from frame to frame differently from the truth (flicker, frames out of order).
    """
    if pred.shape[1] < 2:
        return pred.new_zeros(())
    return (pred.diff(dim=1) - target.diff(dim=1)).abs().mean()


def flow_matching_loss(unet, z_disp: torch.Tensor, z_rgb: torch.Tensor, positions: torch.Tensor,
                       gen: torch.Generator, sigma_one_p: float = 0.25, prediction: str = "sample",
                       temporal_weight: float = 0.0, zero_start_p: float = 0.0) -> tuple[torch.Tensor, dict]:
    """MSE on the velocity ε − x0 (``v_prediction``) or on the clean latent x0 (``sample``), plus
    ``temporal_weight`` × :func:`temporal_gradient_loss` of the implied clean latent. Returns (loss, parts)."""
    b = z_disp.shape[0]
    sigma = torch.rand(b, generator=gen)
    one = torch.rand(b, generator=gen) < sigma_one_p
    sigma = torch.where(one, torch.ones_like(sigma), sigma)
    noise = torch.randn(z_disp.shape, generator=gen)
    if zero_start_p > 0:  # the pipeline's default start: every frame's latent at zero, σ = 1
        zero = one & (torch.rand(b, generator=gen) < zero_start_p)
        noise = torch.where(zero.view(b, 1, 1, 1, 1), torch.zeros_like(noise), noise)
    s = sigma.view(b, 1, 1, 1, 1)
    noisy = (1 - s) * z_disp + s * noise
    pred = unet(torch.cat([noisy, z_rgb], 2), sigma * 1000, position_ids=positions).sample
    mse = F.mse_loss(pred, noise - z_disp if prediction == "v_prediction" else z_disp)
    if not temporal_weight:
        return mse, {"mse": mse.item()}
    x0 = pred if prediction == "sample" else noisy - s * pred
    tgm = temporal_gradient_loss(x0, z_disp)
    return mse + temporal_weight * tgm, {"mse": mse.item(), "tgm": tgm.item()}


def sample_step(clips, rng: np.random.Generator, frames_per_step: int, duration_p=DURATION_P):
    p = tuple(duration_p) + (0.0,) * (len(DURATIONS) - len(duration_p))
    f = int(rng.choice(DURATIONS, p=p))
    f = min(f, frames_per_step)
    rgb, disp, idx = sample_windows(clips, rng, f, max(1, frames_per_step // f))
    rate = int(rng.choice(RATE_FACTORS))
    positions = (idx - idx[:, :1]) * rate + rng.integers(0, 200, size=(len(idx), 1))
    return rgb, disp, torch.from_numpy(positions)


def make_pipeline(unet, codec, prediction: str):
    from diffusers import FlowMatchEulerDiscreteScheduler

    from backends.videodepth.pipeline import VideoDepthPipeline

    pipe = VideoDepthPipeline(vae=codec, unet=unet, scheduler=FlowMatchEulerDiscreteScheduler(**N.SCHEDULER_CONFIG),
                              prediction_type=prediction)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def evaluate(unet, codec, clips, prediction: str, n_clips: int = 8, frames: int = 16, steps: int = 1) -> dict[str, float]:
    pipe = make_pipeline(unet, codec, prediction)
    rows = []
    for c in range(min(n_clips, len(clips["rgb"]))):
        sl = slice(0, frames)
        pred = pipe(clips["rgb"][c, sl], position_ids=np.arange(frames), num_inference_steps=steps,
                    generator=torch.Generator().manual_seed(c)).disparity
        rows.append(evaluate_clip(pred, clips["depth"][c, sl].astype(np.float32), clips["static"][c, sl],
                                  clips["intrinsics"][c], clips["extrinsics"][c, sl]))
    return {k: float(np.nanmean([r[k] for r in rows])) for k in rows[0]}


def _ema_update(ema, net, step: int, decay_max: float) -> None:
    with torch.no_grad():
        decay = min(decay_max, (1 + step) / (10 + step))
        for pe, p in zip(ema.parameters(), net.parameters(), strict=True):
            pe.mul_(decay).add_(p.detach(), alpha=1 - decay)


def _log(run: Path, msg: str) -> None:
    print(msg, flush=True)
    with open(run / "log.txt", "a") as f:
        f.write(msg + "\n")


def optimizer_step(unet, ema, opt, loss: torch.Tensor, step: int, lr: float, warmup: int, ema_decay: float) -> None:
    """Backward, clip to norm 1, linear warm-up of the learning rate over ``warmup`` steps, step, EMA update."""
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(unet.parameters(), 1.0)
    for g in opt.param_groups:
        g["lr"] = lr * min(1.0, (step + 1) / warmup)
    opt.step()
    _ema_update(ema, unet, step, ema_decay)


def save_state(run: Path, unet, ema, opt, step: int, elapsed: float) -> None:
    """Write ``run/state.pt`` atomically (through a temporary file), for ``resume_state``."""
    torch.save({"unet": unet.state_dict(), "ema": ema.state_dict(), "opt": opt.state_dict(), "step": step,
                "elapsed": elapsed}, run / "state.tmp")
    (run / "state.tmp").rename(run / "state.pt")


def resume_state(run: Path, unet, ema, opt) -> tuple[int, float]:
    """Load ``run/state.pt`` into the networks and optimiser; return (step, elapsed seconds)."""
    st = torch.load(run / "state.pt", weights_only=False)
    unet.load_state_dict(st["unet"])
    ema.load_state_dict(st["ema"])
    opt.load_state_dict(st["opt"])
    _log(run, f"resumed at step {st['step']} ({st['elapsed'] / 60:.1f} min)")
    return st["step"], st["elapsed"]


def train(args) -> dict:
    run = args.run_dir
    run.mkdir(parents=True, exist_ok=True)
    clips = cached_clips("train", args.data_dir, args.train_clips)
    held_out = cached_clips("eval", args.data_dir, args.eval_clips)
    overrides = json.loads(args.unet_config) if args.unet_config else {}
    unet, ema = N.build_unet(**overrides), N.build_unet(**overrides)
    codec = N.build_codec()
    opt = torch.optim.AdamW(unet.parameters(), lr=args.lr, weight_decay=1e-2)
    step, elapsed = 0, 0.0
    if args.resume and (run / "state.pt").exists():
        step, elapsed = resume_state(run, unet, ema, opt)
    else:
        if args.init_from:
            unet.load_state_dict(torch.load(args.init_from, weights_only=False)["ema"])
            _log(run, f"initialised from {args.init_from} (EMA weights); objective: {args.prediction}")
        ema.load_state_dict(unet.state_dict())
    ema.eval()
    rng = np.random.default_rng(args.seed + step)
    gen = torch.Generator().manual_seed(args.seed + step)
    _log(run, f"recipe: {json.dumps(_recipe(args))}")
    t0, last, losses, parts = time.time() - elapsed, time.time(), [], []
    while time.time() - t0 < args.hours * 3600 and (args.max_steps is None or step < args.max_steps):
        rgb, disp, positions = sample_step(clips, rng, args.frames_per_step, args.duration_p)
        z_disp, z_rgb = encode_batch(codec, rgb, disp)
        loss, part = flow_matching_loss(unet, z_disp, z_rgb, positions, gen, prediction=args.prediction,
                                        temporal_weight=args.temporal_weight, zero_start_p=args.zero_start_p)
        optimizer_step(unet, ema, opt, loss, step, args.lr, 200, args.ema)
        step += 1
        losses.append(loss.item())
        parts.append(part)
        if step % args.log_every == 0:
            recent = parts[-args.log_every:]
            detail = "".join(f" {k} {np.mean([p[k] for p in recent]):.4f}" for k in ("mse", "tgm") if "tgm" in part)
            _log(run, f"step {step} loss {np.mean(losses[-args.log_every:]):.4f}{detail} "
                      f"elapsed {(time.time() - t0) / 60:.1f} min")
        if time.time() - last > args.checkpoint_minutes * 60:
            _save(run, unet, ema, opt, step, time.time() - t0, losses, codec, held_out, args)
            last = time.time()
    return _save(run, unet, ema, opt, step, time.time() - t0, losses, codec, held_out, args)


def _save(run: Path, unet, ema, opt, step: int, elapsed: float, losses, codec, held_out, args) -> dict:
    save_state(run, unet, ema, opt, step, elapsed)
    ema.save_pretrained(run / "model" / "unet")
    metrics = evaluate(ema, codec, held_out, args.prediction, n_clips=args.eval_during_training) \
        if args.eval_during_training else {}
    info = {"steps": step, "minutes": round(elapsed / 60, 1), "frames_per_step": args.frames_per_step,
            "prediction": args.prediction, "init_from_steps": args.init_from_steps,
            "final_loss": float(np.mean(losses[-200:])) if losses else None, "eval_1step": metrics, **_recipe(args)}
    (run / "info.json").write_text(json.dumps(info, indent=1))
    _log(run, f"checkpoint {json.dumps(info)}")
    return info


def _recipe(args) -> dict:
    """The temporal-consistency settings of a run (recorded in info.json and the log)."""
    return {"temporal_weight": args.temporal_weight, "duration_p": list(args.duration_p),
            "zero_start_p": args.zero_start_p, "lr": args.lr, "ema": args.ema}


def _probabilities(text: str) -> tuple[float, ...]:
    p = tuple(float(x) for x in text.split(","))
    if len(p) not in (len(DURATIONS) - 1, len(DURATIONS)) or min(p) < 0 or abs(sum(p) - 1) > 1e-6:
        raise argparse.ArgumentTypeError(f"need {len(DURATIONS)} probabilities summing to 1 for clip lengths {DURATIONS} "
                                         f"(or the first {len(DURATIONS) - 1})")
    return p


def export(args) -> dict:
    """The EMA UNet as an fp16 ``VideoDepthPipeline`` folder, scored on held-out clips and real photographs."""
    from backends.videodepth.evaluation import evaluate_pipeline

    info = json.loads((args.run_dir / "info.json").read_text())
    unet = N.UNetSpatioTemporalRopeConditionModel.from_pretrained(args.run_dir / "model" / "unet").eval()
    pipe = make_pipeline(unet, N.build_codec(), info.get("prediction", "v_prediction"))
    held_out = cached_clips("eval", args.data_dir, args.eval_clips)
    metrics = {"eval_clips": args.export_eval_clips, "frames_per_clip": 16, "resolution": "64x64",
               "alignment": "least-squares scale and shift in disparity, per video"}
    for steps in (1, 3):
        scores = evaluate_pipeline(pipe, held_out, n_clips=args.export_eval_clips, steps=steps)
        metrics[f"steps_{steps}"] = scores
        _log(args.run_dir, f"export eval, {steps} step(s): {json.dumps(scores)}")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    pipe.unet.to(torch.float16)
    pipe.save_pretrained(out)
    drop_name_or_path(out)
    pipe.unet.to(torch.float32)
    metrics.update(train_steps=info["steps"] + info.get("init_from_steps", 0), prediction=pipe.config.prediction_type,
                   train_minutes=info["minutes"], frames_per_step=info["frames_per_step"],
                   final_loss=info["final_loss"], params_m=round(sum(p.numel() for p in unet.parameters()) / 1e6, 2),
                   recipe={k: info[k] for k in ("temporal_weight", "duration_p", "zero_start_p", "lr", "ema") if k in info})
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1))
    _real_photographs(pipe, out / "real_photographs.png")
    return metrics


def _real_photographs(pipe, path: Path) -> None:
    """scikit-image's sample photographs (64×64, centre crop) beside the model's disparity (3 steps)."""
    from PIL import Image
    from skimage import data

    tiles = []
    for name in ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry"):
        img = Image.fromarray(getattr(data, name)()).convert("RGB")
        side = min(img.size)
        img = img.crop(((img.width - side) // 2, (img.height - side) // 2, (img.width + side) // 2,
                        (img.height + side) // 2)).resize((64, 64), Image.Resampling.LANCZOS)
        rgb = np.asarray(img)
        disp = pipe(rgb[None], num_inference_steps=3, generator=torch.Generator().manual_seed(0)).disparity[0]
        tiles.append(np.concatenate([rgb, np.repeat((disp * 255).astype(np.uint8)[..., None], 3, 2)], 0))
    Image.fromarray(np.concatenate(tiles, 1)).resize((64 * len(tiles) * 2, 256), Image.Resampling.NEAREST).save(path)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--phase", choices=("train", "export"), default="train")
    p.add_argument("--hours", type=float, default=1.5, help="wall-time cap (training time, resumes count)")
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--frames-per-step", type=int, default=16)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--ema", type=float, default=0.999)
    p.add_argument("--train-clips", type=int, default=1500)
    p.add_argument("--eval-clips", type=int, default=48)
    p.add_argument("--eval-during-training", type=int, default=8, help="held-out clips scored at each checkpoint")
    p.add_argument("--unet-config", default=None, help="JSON overrides of the embedded UNet config (tests)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--checkpoint-minutes", type=float, default=10.0)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--prediction", choices=("sample", "v_prediction"), default="sample",
                   help="UNet target: the clean latent x0 (default) or the velocity ε − x0 (as published)")
    p.add_argument("--temporal-weight", type=float, default=0.0,
                   help="weight of the temporal-gradient-matching loss on multi-frame clips (0: the shipped recipe)")
    p.add_argument("--duration-p", type=_probabilities, default=DURATION_P,
                   help=f"probabilities of the clip lengths {DURATIONS}, comma-separated (default {DURATION_P})")
    p.add_argument("--zero-start-p", type=float, default=0.0,
                   help="share of σ = 1 samples started from the zero latent (the pipeline's default) instead of noise")
    p.add_argument("--init-from", type=Path, default=None, help="state.pt whose EMA weights start a new run")
    p.add_argument("--init-from-steps", type=int, default=0, help="steps that --init-from had trained (recorded)")
    p.add_argument("--run-dir", type=Path, default=ROOT / "training" / "runs" / "videodepth")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "videodepth-embedded")
    p.add_argument("--export-eval-clips", type=int, default=24)
    p.add_argument("--data-dir", type=Path, default=None, help="rendered clip cache (default: RUN_DIR/data)")
    args = p.parse_args(argv)
    args.data_dir = args.data_dir or args.run_dir / "data"
    seed_everything(args.seed)
    torch.set_num_threads(args.threads)
    result = train(args) if args.phase == "train" else export(args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
