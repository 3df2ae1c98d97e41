"""Train the Unlearning tab's label-conditional teacher: ε-prediction DDPM of 32×32 shape images, one label per
shape plus a null label (10% label dropout) for classifier-free and negative guidance.

    python -m training.unlearn_teacher [--minutes 40] [--images 12000] [--out assets/unlearn-teacher]

Checkpoints (raw + EMA weights, optimiser, step) to ``--run-dir`` every few minutes and writes the EMA
weights to ``--out``, so a stopped run still leaves a usable teacher; ``--resume`` continues.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from backends.common.seeding import seed_everything
from backends.synth.shape_images import CLASSES, cached_split
from backends.unlearn.networks import DEFAULT_CONFIG, LabelUNet
from backends.unlearn.schedule import T, add_noise, alphas_cumprod

ROOT = Path(__file__).resolve().parents[1]


def checkpoint(path: Path, **state) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(path)


def train(args) -> dict:
    seed_everything(args.seed)
    torch.set_num_threads(args.threads)
    data = cached_split("train", args.data_dir, args.images)
    images = torch.from_numpy(data["images"]).permute(0, 3, 1, 2).float() / 127.5 - 1.0
    labels = torch.from_numpy(data["labels"])
    abar = alphas_cumprod()
    net = LabelUNet(**DEFAULT_CONFIG)
    ema = LabelUNet(**DEFAULT_CONFIG)
    ema.load_state_dict(net.state_dict())
    ema.requires_grad_(False)
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    run_dir = Path(args.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    state_path = run_dir / "state.pt"
    step, elapsed = 0, 0.0
    if args.init is not None:  # continue a finished teacher (its EMA weights) with a fresh optimiser
        prior, _ = LabelUNet.load(args.init)
        net.load_state_dict(prior.state_dict())
        ema.load_state_dict(prior.state_dict())
        done = json.loads((Path(args.init) / "training.json").read_text())
        step, elapsed = done["steps"], done["train_seconds"]
        print(f"initialised from {Path(args.init).name} at step {step}", flush=True)
    if args.resume and state_path.exists():
        st = torch.load(state_path, weights_only=False)
        net.load_state_dict(st["net"])
        ema.load_state_dict(st["ema"])
        opt.load_state_dict(st["opt"])
        step, elapsed = st["step"], st["elapsed"]
        print(f"resumed at step {step}", flush=True)
    gen = torch.Generator().manual_seed(args.seed + step)
    t0, last = time.time() - elapsed, time.time()
    first_step = step
    log = open(run_dir / "loss.log", "a")
    losses = []
    while time.time() - t0 < args.minutes * 60 + (elapsed if args.init is not None else 0.0):
        idx = torch.randint(len(images), (args.batch,), generator=gen)
        x0, y = images[idx], labels[idx].clone()
        flip = torch.rand(args.batch, generator=gen) < 0.5
        x0 = torch.where(flip[:, None, None, None], x0.flip(-1), x0)
        y[torch.rand(args.batch, generator=gen) < args.label_dropout] = len(CLASSES)
        t = torch.randint(T, (args.batch,), generator=gen)
        eps = torch.randn(x0.shape, generator=gen)
        loss = (net(add_noise(x0, t, eps, abar), t, y) - eps).pow(2).mean()
        for g in opt.param_groups:
            g["lr"] = args.lr * min(1.0, (step - first_step + 1) / 200)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        decay = min(args.ema, (1 + step) / (10 + step))
        with torch.no_grad():
            for pe, p in zip(ema.parameters(), net.parameters(), strict=True):
                pe.lerp_(p, 1 - decay)
        step += 1
        losses.append(loss.item())
        if step % 50 == 0:
            msg = f"step {step} loss {np.mean(losses[-50:]):.4f} {(time.time() - t0) / 60:.1f} min"
            print(msg, flush=True)
            log.write(msg + "\n")
            log.flush()
        if time.time() - last > args.checkpoint_minutes * 60:
            last = time.time()
            checkpoint(state_path, net=net.state_dict(), ema=ema.state_dict(), opt=opt.state_dict(), step=step,
                       elapsed=time.time() - t0)
            ema.save(args.out, {"teacher_id": "unlearn-teacher", "step": step})
    elapsed = time.time() - t0
    checkpoint(state_path, net=net.state_dict(), ema=ema.state_dict(), opt=opt.state_dict(), step=step, elapsed=elapsed)
    ema.save(args.out, {"teacher_id": "unlearn-teacher", "step": step})
    summary = dict(steps=step, batch=args.batch, train_images=len(images), train_seconds=round(elapsed, 1),
                   final_loss=float(np.mean(losses[-200:])) if losses else None,
                   params=sum(p.numel() for p in net.parameters()))
    (Path(args.out) / "training.json").write_text(json.dumps(summary, indent=2))
    return summary


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=40.0)
    p.add_argument("--images", type=int, default=12_000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--ema", type=float, default=0.999)
    p.add_argument("--label-dropout", type=float, default=0.1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint-minutes", type=float, default=3.0)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--init", type=Path, default=None,
                   help="a saved teacher folder to continue from (weights and its training.json step count)")
    p.add_argument("--data-dir", type=Path, default=ROOT / "training" / "data")
    p.add_argument("--run-dir", type=Path, default=ROOT / "training" / "runs" / "unlearn-teacher")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "unlearn-teacher")
    print(json.dumps(train(p.parse_args(argv)), indent=2))


if __name__ == "__main__":
    main()
