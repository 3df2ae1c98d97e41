"""Depth Any Video on held-out synthetic clips: ours vs the same model frame by frame vs frame by frame plus
temporal smoothing, side by side in one run; then throughput and peak memory at 32, 150 and 600 frames.

Accuracy: held-out clips (``data.cached_clips("eval")``: seeds from 1,000,000 — scenes and camera paths
never seen in training), 32 frames each at 64×64. Each method's disparity is aligned per video (one
least-squares scale and shift in disparity) before AbsRel and δ1; TAE reprojects each frame's aligned
depth into the next with the true poses (static pixels). Methods:
  - ours: the tab's default long-video path for the model (``service.long_video_method``, "auto"):
    a clip of at most one window (32 frames, as the bench's clips) in one joint call; longer videos: key frames
    inferred jointly, then either the interpolation UNet filling the 18-frame segments between them
    (``interpolation.stream_depth_interpolated``) or windows of 32 aligned to the key frames
    (``longvideo.stream_depth``); the other path is scored too and printed (``--long-video`` picks ours);
  - per-frame: the same model on each frame alone (the paper's per-frame baseline);
  - per-frame + smoothing: that, then a centred 3-frame moving average over time.
All three run at the same Euler steps (``--steps``, default 3: the tab's). Every method starts the disparity
latent the same way, the pipeline's default ``initial_noise="zero"`` (``VideoDepthPipeline.__call__``), so the comparison is fair: before, ours drew independent noise per frame
while every per-frame call reused one seed's map, and that alone made ours flicker more (TAE 0.016 vs 0.009).
Memory: one subprocess per length loads the model, then runs the user action
(``videodepth_estimate_depth`` through ``bench.actions.run_action``, as the tab and the CLI run it:
decode, depth, H.264, 16-bit PNGs, npz) on a video of that many frames, on the CPU (``device=cpu``: the
action's model in fp32, as measured before); resident memory is sampled every 5 ms during the run (its peak,
and the peak above the loaded process), and the frames per second are those of the run as a user waits for it.
The accuracy part is model-level, not a user action: it calls the pipeline (``long_video``, per-frame)
on clips held in memory, with ground truth.

    python -m bench.videodepth [--quick]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.report import markdown_table, write_results

ROOT = Path(__file__).resolve().parents[1]
LENGTHS = (32, 150, 600)


def smooth(disp: np.ndarray, k: int = 3) -> np.ndarray:
    """Centred moving average over time (edges use the frames that exist)."""
    out = np.empty_like(disp)
    for t in range(len(disp)):
        out[t] = disp[max(0, t - k // 2):t + k // 2 + 1].mean(0)
    return out


def paired(rows: dict[str, list[dict]], a: str, b: str) -> dict[str, dict[str, float]]:
    """Per-clip differences ``a − b`` for each metric: mean, the 95% confidence interval's half-width (t, n − 1
    degrees of freedom) and on how many clips ``a`` is better — means alone hide how noisy 32 clips are."""
    from scipy import stats

    out = {}
    for k, lower_is_better in (("absrel", True), ("delta1", False), ("tae", True)):
        d = np.array([ra[k] - rb[k] for ra, rb in zip(rows[a], rows[b], strict=True)], float)
        d = d[np.isfinite(d)]
        half = float(stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
        better = int(((d < 0) if lower_is_better else (d > 0)).sum())
        out[k] = {"mean": float(d.mean()), "ci95": half, "better_on": better, "clips": len(d)}
    return out


def accuracy(pipe, clips: dict, n_clips: int, steps: int, method: str) -> tuple[dict, dict]:
    import torch

    from backends.videodepth.evaluation import long_video
    from backends.videodepth.metrics import evaluate_clip

    other = {"interpolation": "windows", "windows": "interpolation"}[method]
    rows: dict[str, list[dict]] = {"ours": [], "perframe": [], "smoothed": []}
    if getattr(pipe, "unet_interp", None) is not None:
        rows["other"] = []
    for c in range(n_clips):
        rgb, depth = clips["rgb"][c], clips["depth"][c].astype(np.float32)
        gt = (clips["static"][c], clips["intrinsics"][c], clips["extrinsics"][c])
        single = np.concatenate([pipe(rgb[i:i + 1], position_ids=[i], num_inference_steps=steps,
                                      generator=torch.Generator().manual_seed(c)).disparity for i in range(len(rgb))])
        preds = {"ours": long_video(pipe, rgb, method, steps, c), "perframe": single, "smoothed": smooth(single)}
        if "other" in rows:
            preds["other"] = long_video(pipe, rgb, other, steps, c)
        for name, pred in preds.items():
            rows[name].append(evaluate_clip(pred, depth, *gt))
        print(f"clip {c + 1}/{n_clips}: ours AbsRel {rows['ours'][-1]['absrel']:.3f} TAE {rows['ours'][-1]['tae']:.4f} · "
              f"per-frame {rows['perframe'][-1]['absrel']:.3f} / {rows['perframe'][-1]['tae']:.4f}", flush=True)
    means = {name: {k: float(np.nanmean([r[k] for r in rs])) for k in ("absrel", "delta1", "tae")}
             for name, rs in rows.items()}
    return means, {"ours_minus_smoothed": paired(rows, "ours", "smoothed"),
                   "ours_minus_perframe": paired(rows, "ours", "perframe")}


def make_video(path: Path, frames: int) -> Path:
    """A held-out clip rendered once and played forwards and backwards up to ``frames`` frames."""
    from backends.common.video import write_mp4
    from backends.videodepth.data import EVAL_SEED_OFFSET, render_clip

    clip = render_clip(EVAL_SEED_OFFSET + 999_000, 75).rgb
    cycle = np.concatenate([clip, clip[::-1]])
    return write_mp4((cycle[i % len(cycle)] for i in range(frames)), path, fps=24)


def measure_length(video: Path, steps: int, long_video: str = "auto") -> dict:
    """Run in a fresh process: the whole service on ``video``; time, and resident memory sampled every 5 ms
    during the run (``ru_maxrss`` alone would report the transient peak of loading torch and the model)."""
    import threading

    import psutil
    import torch

    torch.set_num_threads(1)
    from backends.common.settings import configure
    from backends.videodepth.service import VideoDepthRequest
    from bench.actions import load_model, run_action

    configure(device="cpu")  # the action's model on this CPU (fp32), as this bench has always measured it

    def request(out: Path) -> VideoDepthRequest:
        return VideoDepthRequest(video, out, num_inference_steps=steps, baseline_frames=0, max_frames=3000,
                                 long_video=long_video)

    load_model("videodepth_estimate_depth", request(Path("-")))  # loaded before the clock (the run reuses it)
    proc = psutil.Process()
    before = proc.memory_info().rss / 2**20
    peak, done = [before], threading.Event()

    def sample():
        while not done.wait(0.005):
            peak[0] = max(peak[0], proc.memory_info().rss / 2**20)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        result = run_action("videodepth_estimate_depth", request(Path(out)))
        seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    return {"frames": result.frames, "seconds": round(seconds, 2), "frames_per_s": round(result.frames / seconds, 2),
            "peak_rss_mb": round(peak[0], 1), "rss_before_run_mb": round(before, 1),
            "run_extra_mb": round(peak[0] - before, 1),
            "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def throughput(steps: int, long_video: str = "auto") -> dict[int, dict]:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in LENGTHS:
            video = make_video(Path(tmp) / f"clip_{n}.mp4", n)
            res = subprocess.run([sys.executable, "-m", "bench.videodepth", "--measure", str(video), "--steps", str(steps),
                                  "--long-video", long_video],
                                 capture_output=True, text=True, cwd=ROOT, check=True)
            out[n] = json.loads(res.stdout.strip().splitlines()[-1])
            print(f"{n} frames: {out[n]}", flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="4 held-out clips instead of 32 (same lengths for memory)")
    p.add_argument("--clips", type=int, help="held-out clips (default 32; quick 4)")
    p.add_argument("--steps", type=int, default=3, help="Euler steps, ours and both baselines (the tab's default: 3)")
    p.add_argument("--long-video", choices=("auto", "interpolation", "windows"), default="auto",
                   help="ours: the tab's long-video path (auto: the model's default)")
    p.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # internal: one length in a fresh process
    args = p.parse_args(argv)
    if args.measure:
        print(json.dumps(measure_length(args.measure, args.steps, args.long_video)))
        return 0
    import torch

    from backends.videodepth.data import EVAL_FRAMES, cached_clips
    from backends.videodepth.loading import load_model

    torch.set_num_threads(1)
    n_clips = args.clips or (4 if args.quick else 32)
    started = time.perf_counter()
    clips = cached_clips("eval", ROOT / "training" / "data", n_clips, workers=1)
    from backends.videodepth.service import VideoDepthRequest, long_video_method

    pipe = load_model()
    method = long_video_method(VideoDepthRequest(Path("-"), Path("-"), long_video=args.long_video), pipe, EVAL_FRAMES)
    acc, diffs = accuracy(pipe, clips, n_clips, args.steps, method)
    lengths = throughput(args.steps, args.long_video)
    paths = {"interpolation": "key frames + interpolation network", "windows": "key frames + aligned windows"}
    other = next(k for k in paths if k != method)
    names = {"ours": f"ours ({paths[method]}, RoPE)", "perframe": "same model, frame by frame",
             "smoothed": "frame by frame + 3-frame smoothing", "other": f"the other long-video path ({paths[other]})"}
    print(markdown_table(["method", "AbsRel ↓", "δ1 ↑", "TAE ↓"],
                         [[names[k], v["absrel"], v["delta1"], v["tae"]] for k, v in acc.items()]))
    print(markdown_table(["ours minus", "metric", "mean", "95% CI ±", "ours better on"],
                         [[who.split("_minus_")[1], k, d["mean"], d["ci95"], f"{d['better_on']} of {d['clips']} clips"]
                          for who, per in diffs.items() for k, d in per.items()]))
    print(markdown_table(["frames", "seconds", "frames/s", "peak RSS during the run (MB)", "above the loaded model (MB)"],
                         [[n, r["seconds"], r["frames_per_s"], r["peak_rss_mb"], r["run_extra_mb"]]
                          for n, r in lengths.items()]))
    ratio = lengths[600]["peak_rss_mb"] / lengths[32]["peak_rss_mb"]
    path = write_results("videodepth", {
        "absrel": round(acc["ours"]["absrel"], 4), "baseline_perframe_absrel": round(acc["perframe"]["absrel"], 4),
        "delta1": round(acc["ours"]["delta1"], 4), "tae": round(acc["ours"]["tae"], 5),
        "baseline_perframe_tae": round(acc["perframe"]["tae"], 5),
        "frames_per_s": lengths[600]["frames_per_s"], "peak_mem_ratio_600_vs_32": round(ratio, 3),
        "baseline_perframe_delta1": round(acc["perframe"]["delta1"], 4),
        "baseline_smoothed_absrel": round(acc["smoothed"]["absrel"], 4),
        "baseline_smoothed_delta1": round(acc["smoothed"]["delta1"], 4),
        "baseline_smoothed_tae": round(acc["smoothed"]["tae"], 5),
        "paired_per_clip": diffs,
        "lengths": {str(n): r for n, r in lengths.items()},
        "quick": args.quick, "clips": n_clips, "frames_per_clip": EVAL_FRAMES, "steps": args.steps,
        "model": f"videodepth-embedded, long videos: {paths[method]}", "initial_noise": "zero (ours and both baselines)",
        "bench_minutes": round((time.perf_counter() - started) / 60, 1),
    })
    print(f"videodepth: AbsRel {acc['ours']['absrel']:.3f} vs per-frame {acc['perframe']['absrel']:.3f}; TAE "
          f"{acc['ours']['tae']:.4f} vs {acc['perframe']['tae']:.4f}; peak memory 600 vs 32 frames ×{ratio:.2f}; "
          f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
