"""Train the embedded model's key-frame interpolation UNet (Depth Any Video's ``unet_interp``) on CPU.

    python -m training.videodepth_interp --run-dir RUN --data-dir DATA --init-from MAIN_RUN/state.pt --hours 1.4
    python -m training.videodepth_interp --run-dir RUN --data-dir DATA --phase export   # → assets/…/unet_interp
    python -m training.videodepth_interp --run-dir RUN --data-dir DATA --phase evaluate # long held-out clips

Long videos in Depth Any Video: key frames spread over the whole video are denoised jointly (one
disparity scale for all of them), then a second UNet fills each segment between two key frames. Its
input is [noisy disparity latent, RGB latent, masked key latents (the key frames' latents at both
ends, zeros between), mask (ones at both ends)] (``backends.videodepth.interpolation``). Its job is to
carry the key frames' disparity SCALE into the segment: a segment alone has no idea how near it is
compared with the rest of the video; its key frames do.

So the training target is NOT normalised per segment (as the main model's is): the disparity is
normalised over the whole rendered clip, then mapped by a random affine a·d + b (a ∈ [0.35, 1],
the range kept inside [-1, 1]), and the key latents are the true latents of the segment's end frames
in that same mapping, plus a little noise and a small random gain error (inferred key frames are not
exact), so the net learns to trust the keys but not to copy their noise. Without the keys the scale
and shift are unknowable; with them they are exact. ``--predicted-keys-p`` gives that share of the
steps the frozen main model's own estimate of the two end frames instead (``predicted_keys``: one step
from zero with their true indices, as inference makes key frames, fitted by one scale and shift to the
true ends), so the keys carry the main model's real, structured errors while the target stays the
truth: the net learns to take the scale from the keys, not their mistakes.

Everything else is the main model's recipe, reused from ``training.videodepth_model`` (codec, batch
encoding, flow-matching objective with the clean-latent target, temporal-gradient loss, zero start,
EMA, logging): same class and tiny config with ``in_channels`` = 4 × 48, warm-started from the main
model's weights with the new input channels of ``conv_in`` at zero, so step 0 is the main model.
Segments: 18 frames (16 to fill + 2 keys: the inference segment) or shorter, contiguous or strided,
true indices (plus a random offset) as RoPE positions. Each checkpoint scores the EMA on held-out
clips through the real long-video path (``stream_depth_interpolated``) next to the windowed path.
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
from backends.videodepth.data import cached_clips, disparity_target
from backends.videodepth.metrics import evaluate_clip
from training.asset_files import drop_name_or_path
from training.videodepth_model import (
    _log,
    encode_batch,
    optimizer_step,
    resume_state,
    save_state,
    temporal_gradient_loss,
)

ROOT = Path(__file__).resolve().parents[1]
SEGMENT_LENGTHS = (18, 12, 8)  # 18 = num_interp 16 + 2 key frames, the inference segment
SEGMENT_P = (0.6, 0.2, 0.2)


def expand_conv_in(state: dict[str, torch.Tensor], in_channels: int) -> dict[str, torch.Tensor]:
    """A main-UNet state dict for a UNet with ``in_channels`` inputs: the new input channels of ``conv_in``
    get zero weights, so the expanded net computes exactly what the main one did (warm start)."""
    state = dict(state)
    w = state["conv_in.weight"]
    if w.shape[1] > in_channels:
        raise ValueError(f"conv_in has {w.shape[1]} input channels, more than {in_channels}")
    state["conv_in.weight"] = torch.cat([w, w.new_zeros(w.shape[0], in_channels - w.shape[1], *w.shape[2:])], 1)
    return state


def build_interp_unet(**overrides) -> N.UNetSpatioTemporalRopeConditionModel:
    """The main UNet's config with 4 × ``out_channels`` inputs: noise, RGB, masked key latents, mask."""
    config = {**N.EMBEDDED_UNET_CONFIG, **overrides}
    return N.build_unet(**{**overrides, "in_channels": 4 * config["out_channels"]})


def key_inputs(z_disp: torch.Tensor, gen: torch.Generator, key_noise: float, key_gain: float) -> torch.Tensor:
    """[masked key latents, mask] (B×F×2C×h×w) from the true latents: ends kept (with a little noise and a
    random gain error per key frame), zeros between; the mask is one at both ends."""
    b, f = z_disp.shape[:2]
    masked = torch.zeros_like(z_disp)
    ends = z_disp[:, [0, -1]]
    gain = 1 + key_gain * (2 * torch.rand(b, 2, 1, 1, 1, generator=gen) - 1)
    masked[:, [0, -1]] = ends * gain + key_noise * torch.randn(ends.shape, generator=gen)
    mask = torch.zeros_like(z_disp)
    mask[:, [0, -1]] = 1.0
    return torch.cat([masked, mask], 2)


@torch.no_grad()
def predicted_keys(main_unet, z_disp: torch.Tensor, z_rgb: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The main model's own estimate of the two end frames (denoised jointly from the zero latent in one step with
    their true indices, as inference does), fitted by one least-squares scale and shift per segment to the true
    end latents: keys in the right overall scale that carry the main model's real, structured errors."""
    ends = [0, -1]
    zero = torch.zeros_like(z_disp[:, ends])
    pred = main_unet(torch.cat([zero, z_rgb[:, ends]], 2), 1000.0, position_ids=positions[:, ends]).sample
    out = torch.empty_like(pred)
    for b in range(len(pred)):
        p, t = pred[b].flatten().double(), z_disp[b, ends].flatten().double()
        a = torch.stack([p, torch.ones_like(p)], 1)
        scale, shift = torch.linalg.lstsq(a, t[:, None]).solution.flatten()
        out[b] = (scale * pred[b] + shift).to(pred.dtype)
    return out


def interp_loss(unet, z_disp: torch.Tensor, z_rgb: torch.Tensor, positions: torch.Tensor, gen: torch.Generator,
                sigma_one_p: float = 0.25, temporal_weight: float = 0.5, zero_start_p: float = 0.5,
                key_noise: float = 0.03, key_gain: float = 0.03,
                keys: torch.Tensor | None = None) -> tuple[torch.Tensor, dict]:
    """The main model's objective (clean-latent MSE + temporal gradient matching, σ = 1 often, from zero half
    of those times) with the key-frame channels added to the input. ``keys`` (B×2×C×h×w) replaces the noisy
    true end latents (e.g. :func:`predicted_keys`); the target stays the truth either way."""
    b = z_disp.shape[0]
    sigma = torch.rand(b, generator=gen)
    one = torch.rand(b, generator=gen) < sigma_one_p
    sigma = torch.where(one, torch.ones_like(sigma), sigma)
    noise = torch.randn(z_disp.shape, generator=gen)
    zero = one & (torch.rand(b, generator=gen) < zero_start_p)
    noise = torch.where(zero.view(b, 1, 1, 1, 1), torch.zeros_like(noise), noise)
    s = sigma.view(b, 1, 1, 1, 1)
    noisy = (1 - s) * z_disp + s * noise
    extra = key_inputs(z_disp, gen, key_noise, key_gain)
    if keys is not None:
        extra[:, [0, -1], : z_disp.shape[2]] = keys
    pred = unet(torch.cat([noisy, z_rgb, extra], 2), sigma * 1000, position_ids=positions).sample
    mse = F.mse_loss(pred, z_disp)
    tgm = temporal_gradient_loss(pred, z_disp)
    return mse + temporal_weight * tgm, {"mse": mse.item(), "tgm": tgm.item()}


def sample_segments(clips: dict[str, np.ndarray], rng: np.random.Generator, frames_per_step: int):
    """Segments with key frames at both ends: rgb (B×L×H×W×3), disparity (B×L×H×W) in the clip's normalisation
    under a random affine map, RoPE positions (B×L: true indices + a random offset)."""
    n, total = clips["rgb"].shape[:2]
    length = int(rng.choice(SEGMENT_LENGTHS, p=SEGMENT_P))
    length = min(length, total, frames_per_step)
    rgbs, disps, positions = [], [], []
    for _ in range(max(1, frames_per_step // length)):
        c = int(rng.integers(n))
        strides = [s for s in (1, 2, 3) if (length - 1) * s < total] or [1]
        stride = int(rng.choice(strides))
        start = int(rng.integers(total - (length - 1) * stride))
        idx = start + stride * np.arange(length)
        disp = disparity_target(clips["depth"][c])[idx]  # normalised over the WHOLE clip, not the segment
        a = rng.uniform(0.35, 1.0)
        disp = a * (disp + 1) - 1 + rng.uniform(0, 2 - 2 * a)
        rgb = clips["rgb"][c, idx]
        if rng.random() < 0.5:
            rgb, disp = rgb[:, :, ::-1], disp[:, :, ::-1]
        rgbs.append(rgb)
        disps.append(disp)
        positions.append(idx - idx[0] + rng.integers(0, 200))
    return np.stack(rgbs), np.stack(disps).astype(np.float32), torch.from_numpy(np.stack(positions))


def score_long(pipe, clips: dict[str, np.ndarray], n_clips: int, steps: int = 1, methods=("interp", "windows"),
               frames: int | None = None) -> dict[str, list[dict[str, float]]]:
    """Per-clip AbsRel / δ1 / TAE on held-out clips through the tab's long-video paths: ``interp`` (key frames +
    the interpolation UNet), ``windows`` (key frames + aligned windows), ``perframe`` (each frame alone) — the
    bench's settings (``evaluation.long_video``)."""
    from backends.videodepth.evaluation import long_video

    rows: dict[str, list[dict]] = {m: [] for m in methods}
    for c in range(min(n_clips, len(clips["rgb"]))):
        rgb = clips["rgb"][c, :frames]
        depth = clips["depth"][c, :frames].astype(np.float32)
        gt = (clips["static"][c, :frames], clips["intrinsics"][c], clips["extrinsics"][c, :frames])
        for m in methods:
            if m == "perframe":
                pred = np.concatenate([pipe(rgb[i:i + 1], position_ids=[i], num_inference_steps=steps).disparity
                                       for i in range(len(rgb))])
            else:
                pred = long_video(pipe, rgb, "interpolation" if m == "interp" else m, steps, c)
            rows[m].append(evaluate_clip(pred, depth, *gt))
    return rows


def evaluate_long(pipe, clips: dict[str, np.ndarray], n_clips: int, steps: int = 1, methods=("interp", "windows"),
                  frames: int | None = None) -> dict[str, dict[str, float]]:
    """Means of :func:`score_long`."""
    rows = score_long(pipe, clips, n_clips, steps, methods, frames)
    return {m: {k: round(float(np.nanmean([r[k] for r in rs])), 5) for k in ("absrel", "delta1", "tae")}
            for m, rs in rows.items()}


def paired(rows: dict[str, list[dict]], a: str, b: str) -> dict[str, dict[str, float]]:
    """Per-clip differences ``a`` − ``b``: mean, standard error, and the clips where ``a`` is better."""
    out = {}
    for k in ("absrel", "delta1", "tae"):
        d = np.array([ra[k] - rb[k] for ra, rb in zip(rows[a], rows[b], strict=True)])
        better = (d > 0) if k == "delta1" else (d < 0)
        out[k] = {"mean": round(float(d.mean()), 5), "se": round(float(d.std(ddof=1) / np.sqrt(len(d))), 5),
                  "better_clips": int(better.sum()), "clips": len(d)}
    return out


def held_out_long(data_dir: Path, n_clips: int, frames: int) -> dict[str, np.ndarray]:
    """Held-out clips (seeds from ``EVAL_SEED_OFFSET`` + 500,000: never trained on) of ``frames`` frames."""
    from functools import partial

    from backends.common.datacache import cached_arrays
    from backends.videodepth.data import EVAL_SEED_OFFSET, SIZE, make_clips

    seeds = list(range(EVAL_SEED_OFFSET + 500_000, EVAL_SEED_OFFSET + 500_000 + n_clips))
    return cached_arrays(Path(data_dir) / f"videodepth_evallong_{n_clips}x{frames}_{SIZE}.npz", seeds,
                         partial(make_clips, n_frames=frames), workers=1)


def evaluate_phase(args) -> dict:
    """Long held-out clips through both long-video paths and frame by frame, with the pipeline folder ``--out``.

    Per-clip scores are kept in ``RUN/eval_long_rows.json``; ``--methods`` recomputes only those (the windows
    and per-frame scores do not depend on the interpolation net), and the summary uses every method there.
    """
    from backends.videodepth.loading import load_folder

    pipe = load_folder(args.out)
    if "interp" in args.methods and pipe.unet_interp is None:
        raise SystemExit(f"{args.out} has no unet_interp/: export first")
    clips = held_out_long(args.data_dir, args.long_clips, args.long_frames)
    store = args.run_dir / "eval_long_rows.json"
    saved = json.loads(store.read_text()) if store.is_file() else {}
    result = {"clips": args.long_clips, "frames_per_clip": args.long_frames, "resolution": "64x64",
              "alignment": "least-squares scale and shift in disparity, per video",
              "settings": "windows of 32 overlapping by 8 (key-frame stride 24); interpolation segments of 18 "
                          "overlapping by 6 (key-frame stride 12); initial latent zero (evaluation.long_video)"}
    for steps in args.eval_steps:
        key = f"{args.long_clips}x{args.long_frames}_steps_{steps}"
        rows = {**saved.get(key, {}), **score_long(pipe, clips, args.long_clips, steps, tuple(args.methods))}
        saved[key] = rows
        store.write_text(json.dumps(saved))
        means = {m: {k: round(float(np.nanmean([r[k] for r in rs])), 5) for k in ("absrel", "delta1", "tae")}
                 for m, rs in rows.items()}
        pairs = {f"{a}_minus_{b}": paired(rows, a, b) for a, b in (("interp", "windows"), ("interp", "perframe"),
                                                                   ("windows", "perframe")) if a in rows and b in rows}
        result[f"steps_{steps}"] = {**means, **pairs}
        _log(args.run_dir, f"long-clip eval, {steps} step(s): {json.dumps(result[f'steps_{steps}'])}")
    (args.run_dir / "eval_long.json").write_text(json.dumps(result, indent=1))
    return result


def _eval_pipeline(args, interp_unet):
    """The shipped main pipeline (``--main-model``) with ``interp_unet`` as its interpolation network."""
    from backends.videodepth.loading import load_folder

    pipe = load_folder(args.main_model)
    pipe.register_modules(unet_interp=interp_unet)
    return pipe


def train(args) -> dict:
    run = args.run_dir
    run.mkdir(parents=True, exist_ok=True)
    clips = cached_clips("train", args.data_dir, args.train_clips)
    held_out = cached_clips("eval", args.data_dir, args.eval_clips)
    overrides = json.loads(args.unet_config) if args.unet_config else {}
    unet, ema = build_interp_unet(**overrides), build_interp_unet(**overrides)
    codec = N.build_codec()
    opt = torch.optim.AdamW(unet.parameters(), lr=args.lr, weight_decay=1e-2)
    step, elapsed = 0, 0.0
    if args.resume and (run / "state.pt").exists():
        step, elapsed = resume_state(run, unet, ema, opt)
    else:
        if args.init_from:
            main = torch.load(args.init_from, weights_only=False)["ema"]
            unet.load_state_dict(expand_conv_in(main, unet.config.in_channels))
            _log(run, f"warm start from the main model's EMA weights ({args.init_from.name}); new conv_in channels at 0")
        ema.load_state_dict(unet.state_dict())
    ema.eval()
    main_unet = None
    if args.predicted_keys_p > 0:
        main_unet = N.build_unet(**overrides)
        main_unet.load_state_dict(torch.load(args.key_model, weights_only=False)["ema"])
        main_unet.eval().requires_grad_(False)
    rng = np.random.default_rng(args.seed + step)
    gen = torch.Generator().manual_seed(args.seed + step)
    _log(run, f"recipe: {json.dumps(_recipe(args))}")
    if step == 0 and args.eval_during_training and args.main_model:
        base = evaluate_long(_eval_pipeline(args, ema), held_out, args.eval_during_training)
        _log(run, f"before training (warm start): {json.dumps(base)}")
    t0, last, losses, parts = time.time() - elapsed, time.time(), [], []
    while time.time() - t0 < args.hours * 3600 and (args.max_steps is None or step < args.max_steps):
        rgb, disp, positions = sample_segments(clips, rng, args.frames_per_step)
        z_disp, z_rgb = encode_batch(codec, rgb, disp)
        keys = predicted_keys(main_unet, z_disp, z_rgb, positions) \
            if main_unet is not None and rng.random() < args.predicted_keys_p else None
        loss, part = interp_loss(unet, z_disp, z_rgb, positions, gen, temporal_weight=args.temporal_weight,
                                 zero_start_p=args.zero_start_p, key_noise=args.key_noise, key_gain=args.key_gain,
                                 keys=keys)
        optimizer_step(unet, ema, opt, loss, step, args.lr, 100, args.ema)
        step += 1
        losses.append(loss.item())
        parts.append(part)
        if step % args.log_every == 0:
            recent = parts[-args.log_every:]
            _log(run, f"step {step} loss {np.mean(losses[-args.log_every:]):.4f} mse "
                      f"{np.mean([p['mse'] for p in recent]):.4f} tgm {np.mean([p['tgm'] for p in recent]):.4f} "
                      f"elapsed {(time.time() - t0) / 60:.1f} min")
        if time.time() - last > args.checkpoint_minutes * 60:
            _save(run, unet, ema, opt, step, time.time() - t0, losses, held_out, args)
            last = time.time()
    return _save(run, unet, ema, opt, step, time.time() - t0, losses, held_out, args)


def _save(run: Path, unet, ema, opt, step: int, elapsed: float, losses, held_out, args) -> dict:
    save_state(run, unet, ema, opt, step, elapsed)
    ema.save_pretrained(run / "model" / "unet_interp")
    metrics = evaluate_long(_eval_pipeline(args, ema), held_out, args.eval_during_training, methods=("interp",)) \
        if args.eval_during_training and args.main_model else {}
    info = {"steps": step, "minutes": round(elapsed / 60, 1), "frames_per_step": args.frames_per_step,
            "final_loss": float(np.mean(losses[-200:])) if losses else None, "eval_1step": metrics, **_recipe(args)}
    (run / "info.json").write_text(json.dumps(info, indent=1))
    _log(run, f"checkpoint {json.dumps(info)}")
    return info


def _recipe(args) -> dict:
    return {"temporal_weight": args.temporal_weight, "zero_start_p": args.zero_start_p, "lr": args.lr, "ema": args.ema,
            "key_noise": args.key_noise, "key_gain": args.key_gain, "segment_lengths": list(SEGMENT_LENGTHS),
            "segment_p": list(SEGMENT_P), "warm_start": bool(args.init_from),
            "predicted_keys_p": args.predicted_keys_p}


def export(args) -> dict:
    """The EMA interpolation UNet, fp16, as ``unet_interp/`` of the pipeline folder ``--out``; its recipe and
    training record in ``unet_interp_training.json`` there (the long-video evaluation is the bench's)."""
    info = json.loads((args.run_dir / "info.json").read_text())
    unet = N.UNetSpatioTemporalRopeConditionModel.from_pretrained(args.run_dir / "model" / "unet_interp")
    out = args.out / "unet_interp"
    unet.to(torch.float16).save_pretrained(out)
    drop_name_or_path(out)
    record = {**info, "params_m": round(sum(p.numel() for p in unet.parameters()) / 1e6, 2)}
    (args.out / "unet_interp_training.json").write_text(json.dumps(record, indent=1))
    index = args.out / "model_index.json"
    if index.is_file():  # the pipeline's index names the component, so from_pretrained loads it too
        config = json.loads(index.read_text())
        config["unet_interp"] = ["backends.videodepth.networks", "UNetSpatioTemporalRopeConditionModel"]
        index.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    _log(args.run_dir, f"exported {out}")
    return record


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--phase", choices=("train", "export", "evaluate"), default="train")
    p.add_argument("--hours", type=float, default=1.4, help="wall-time cap (training time, resumes count)")
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--frames-per-step", type=int, default=18)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--ema", type=float, default=0.998)
    p.add_argument("--temporal-weight", type=float, default=0.5)
    p.add_argument("--zero-start-p", type=float, default=0.5)
    p.add_argument("--key-noise", type=float, default=0.03, help="std of the noise added to the true key latents")
    p.add_argument("--key-gain", type=float, default=0.03, help="largest random gain error of a key latent")
    p.add_argument("--predicted-keys-p", type=float, default=0.0,
                   help="share of steps whose keys are the main model's fitted estimates (predicted_keys), not the truth")
    p.add_argument("--key-model", type=Path, default=None, help="main model's state.pt for --predicted-keys-p "
                   "(default: --init-from)")
    p.add_argument("--train-clips", type=int, default=1500)
    p.add_argument("--eval-clips", type=int, default=48)
    p.add_argument("--eval-during-training", type=int, default=6, help="held-out clips scored at each checkpoint")
    p.add_argument("--main-model", type=Path, default=ROOT / "assets" / "videodepth-embedded",
                   help="pipeline folder of the main model (key frames in the evaluation)")
    p.add_argument("--unet-config", default=None, help="JSON overrides of the embedded UNet config (tests)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--checkpoint-minutes", type=float, default=8.0)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--init-from", type=Path, default=None, help="main model's state.pt: warm start from its EMA")
    p.add_argument("--run-dir", type=Path, default=ROOT / "training" / "runs" / "videodepth-interp")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "videodepth-embedded")
    p.add_argument("--data-dir", type=Path, default=None, help="rendered clip cache (default: RUN_DIR/data)")
    p.add_argument("--long-clips", type=int, default=16, help="evaluate: held-out long clips")
    p.add_argument("--long-frames", type=int, default=64, help="evaluate: frames per long clip")
    p.add_argument("--eval-steps", type=int, nargs="+", default=[1], help="evaluate: Euler steps")
    p.add_argument("--methods", nargs="+", choices=("interp", "windows", "perframe"),
                   default=["interp", "windows", "perframe"], help="evaluate: the methods to (re)compute")
    args = p.parse_args(argv)
    args.data_dir = args.data_dir or args.run_dir / "data"
    args.key_model = args.key_model or args.init_from
    seed_everything(args.seed)
    torch.set_num_threads(args.threads)
    result = {"train": train, "export": export, "evaluate": evaluate_phase}[args.phase](args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
