"""Fit the out-of-domain statistics of each embedded model (backends/common/ood.py) on held-out synthetic inputs.

    python -m training.ood_calibration [--n-fit 600] [--n-calib 400] [--out assets/ood-calibration]

For each capability that takes uploads into an embedded model — Counterfactual (32×32 images),
Video Depth (frames at 64 px), Avatar (64×64 masked views) — this renders held-out synthetic inputs
with the capability's own data generator (seeds its training never used), brings them to what
the model sees the way an upload is brought there, and fits the feature mean and covariance on one
split and the threshold (a quantile of the distances) on another. Real photographs are never used
to fit anything; the bench (bench/realinputs.py) measures how well photos are told apart.
Writes <capability>.safetensors and a card (README.md, metrics.json) into --out.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from backends.common.ood import CANONICAL_JPEG, FEATURE_NAMES, features, fit_stats

ROOT = Path(__file__).resolve().parents[1]
CAPABILITIES = ("counterfactual", "videodepth", "avatar")
QUANTILE = 0.98
# seed ranges no training, validation, test or example set of the capability uses
FIT_SEEDS = {"counterfactual": 5_000_000, "videodepth": 5_000_000, "avatar": 5_000_000}
CALIB_SEEDS = {"counterfactual": 6_000_000, "videodepth": 6_000_000, "avatar": 6_000_000}
TEST_SEEDS = {"counterfactual": 7_000_000, "videodepth": 7_000_000, "avatar": 7_000_000}
# the video worlds vary most (paths, textures, lighting): more reference frames
N_FIT = {"counterfactual": 1000, "videodepth": 2000, "avatar": 600}
VD_FRAMES_PER_CLIP = 2  # frames kept per rendered clip (spread over it)


def counterfactual_inputs(seed0: int, n: int) -> tuple[list[np.ndarray], None]:
    from backends.counterfactual.data import make_example

    return [make_example(seed0 + i).image for i in range(n)], None


def videodepth_inputs(seed0: int, n: int, h264: bool = False) -> tuple[list[np.ndarray], None]:
    """Frames of held-out clips; ``h264``: every other clip through H.264 as an uploaded video arrives (the bench
    tests on those too; the statistics are fitted on renders, see ``ood.CANONICAL_JPEG``)."""
    from backends.videodepth.data import render_clip

    clips = max(1, n // VD_FRAMES_PER_CLIP)
    frames = []
    for i in range(clips):
        clip = render_clip(seed0 + i, 6).rgb  # a short path: frames of one clip are much alike
        if h264 and i % 2:  # as an uploaded video arrives: through H.264, like the tab's example clips
            clip = h264_round_trip(clip)
        frames.extend(clip[np.linspace(0, len(clip) - 1, VD_FRAMES_PER_CLIP).round().astype(int)])
    return frames[:n], None


def h264_round_trip(frames: np.ndarray, fps: float = 10.0) -> np.ndarray:
    """The frames after writing them as H.264 (``common.video.write_mp4``, as the examples are) and decoding."""
    import tempfile

    from backends.common.video import iter_video_frames, write_mp4

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "clip.mp4"
        write_mp4(list(frames), path, fps=fps)
        return np.stack(list(iter_video_frames(path, 1024)))


def avatar_inputs(seed0: int, n: int, size: int = 64) -> tuple[list[np.ndarray], None]:
    """Views at the reconstructor's size, rendered at 64 or at 128 and resized like an upload. Scored whole, as
    uploaded (a render's background is black; a photo's background is a photo's, whatever its mask says)."""
    from backends.avatar.data import sample_subject

    images, masks = [], []
    i = 0
    while len(images) < n:
        render_size = size if i % 2 == 0 else 2 * size
        sample = sample_subject(seed0 + i, 2, render_size)
        for v in sample.views:
            img, m = avatar_view(v.rgb, v.mask, size)
            images.append(img)
            masks.append(m)
        i += 1
    return images[:n], None


def avatar_view(rgb: np.ndarray, mask: np.ndarray, size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """A view (float or uint8 image, mask) → what the reconstructor sees: resized like ``uploads.resize_views``, masked."""
    import torch
    import torch.nn.functional as F

    img = np.asarray(rgb, np.float32) / (255.0 if np.asarray(rgb).dtype == np.uint8 else 1.0)
    m = (np.asarray(mask, np.float32) > 0.5).astype(np.float32)
    if img.shape[:2] != (size, size):
        t = torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1)[None]
        img = F.interpolate(t, size=(size, size), mode="bilinear", antialias=True).clamp(0, 1)[0].permute(1, 2, 0).numpy()
        tm = torch.from_numpy(m)[None, None]
        m = (F.interpolate(tm, size=(size, size), mode="bilinear", antialias=True)[0, 0] > 0.5).float().numpy()
    return np.round(img * m[..., None] * 255).astype(np.uint8), m


MAKERS = {"counterfactual": counterfactual_inputs, "videodepth": videodepth_inputs, "avatar": avatar_inputs}


def synthetic_features(capability: str, seed0: int, n: int) -> np.ndarray:
    images, masks = MAKERS[capability](seed0, n)
    return features(images, masks, CANONICAL_JPEG.get(capability))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-fit", type=int, help="fit inputs (default: N_FIT, per capability)")
    p.add_argument("--n-calib", type=int, default=400)
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "ood-calibration")
    p.add_argument("--only", choices=CAPABILITIES, action="append")
    args = p.parse_args(argv)
    metrics = {}
    metrics_path = args.out / "metrics.json"
    if metrics_path.is_file():
        metrics = json.loads(metrics_path.read_text())
    for cap in args.only or CAPABILITIES:
        start = time.perf_counter()
        fit = synthetic_features(cap, FIT_SEEDS[cap], args.n_fit or N_FIT[cap])
        calib = synthetic_features(cap, CALIB_SEEDS[cap], args.n_calib)
        stats = fit_stats(fit, calib, QUANTILE)
        stats.meta = {"capability": cap, "n_fit": len(fit), "n_calib": len(calib), "quantile": QUANTILE,
                      "fit_seeds_from": FIT_SEEDS[cap], "calib_seeds_from": CALIB_SEEDS[cap]}
        path = stats.save(args.out / f"{cap}.safetensors")
        metrics[cap] = {**stats.meta, "threshold": round(stats.threshold, 3),
                        "calib_median_distance": round(float(np.median(stats.distance(calib))), 3),
                        "seconds": round(time.perf_counter() - start, 1)}
        print(f"{cap}: threshold {stats.threshold:.2f} ({len(fit)} fit, {len(calib)} calibration inputs) → {path}")
    args.out.mkdir(parents=True, exist_ok=True)
    metrics_path.write_text(json.dumps({"features": list(FEATURE_NAMES), **metrics}, indent=1) + "\n")
    (args.out / "README.md").write_text(card(metrics))
    return 0


def card(metrics: dict) -> str:
    rows = "\n".join(f"| {cap} | {m['n_fit']} | {m['n_calib']} | {m['threshold']:.2f} | {m['calib_median_distance']:.2f} |"
                      for cap, m in metrics.items() if cap in CAPABILITIES)
    return f"""# ood-calibration

Out-of-domain statistics of the embedded models that take uploads — how far an upload is from the
synthetic world a model was trained on (`backends/common/ood.py`). Written by
`python -m training.ood_calibration`; no photograph is used to fit anything.

- **Features** ({len(FEATURE_NAMES)}): natural-image statistics of the input *as the model sees it* (its
  working size; Avatar: the uploaded view whole, its background included) — exactly-flat and
  small-gradient fractions, gradient magnitude and kurtosis, Laplacian and median-residual energy, flat 4×4 blocks, distinct colours,
  saturation, chroma residual, spectral slope, contrast, edge density, planar fraction, hue
  concentration, foreground fraction, one-pixel step edges, grey fraction.
- **Score:** the mean Euclidean distance of the standardized features to the 5 nearest *fit* inputs
  (held-out synthetic inputs; the worlds are mixtures, which a nearest-neighbour distance follows
  better than one Gaussian). A clip or a set of views scores the median over its frames / views.
- **Data:** held-out synthetic inputs from each capability's own generator at seeds its training,
  validation, test and example sets never use (fit from 5,000,000, calibration from 6,000,000; the
  bench tests on 7,000,000): Counterfactual `data.make_example` (32×32), Video Depth
  `data.render_clip` (2 frames of each 6-frame clip, 64×64, each through one JPEG round trip at
  quality 95 — uploads too — so H.264 artefacts of uploaded videos do not count as photographic detail),
  Avatar `data.sample_subject` (views at 64 and at 128 resized like an upload, scored whole: background
  included).
- **Threshold:** the {QUANTILE:.0%} quantile of the calibration inputs' scores, so about {1 - QUANTILE:.0%} of
  true synthetic inputs are flagged by construction.

| capability | fit inputs | calibration inputs | threshold | median calibration score |
|---|---|---|---|---|
{rows}

- **Measured:** `python -m bench.realinputs` → `bench/results/realinputs.json` (AUROC against real
  photographs shipped with scikit-image and matplotlib, share of photos flagged, share of held-out
  synthetic inputs flagged).
- **Cannot:** tell a *wrong* synthetic input from a right one, nor judge a photo's content: it measures
  low-level image statistics. A render saved as a lossy JPEG, or a photo of a flat-shaded toy scene,
  can land on the other side.
"""


if __name__ == "__main__":
    raise SystemExit(main())
