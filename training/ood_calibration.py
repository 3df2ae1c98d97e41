"""Fit the out-of-domain statistics of each embedded model (backends/common/ood.py) on held-out synthetic inputs.

    python -m training.ood_calibration [--n-fit N] [--n-calib 400] [--out assets/ood-calibration] [--only NAME]

Every capability whose spec names a domain (``backends.specs()``, ``backends/<name>/spec.py``) takes uploads into
an embedded model trained on a synthetic world. Its ``backends/<name>/data.py`` says what that world looks like to
the score: ``ood_inputs(seed0, n)`` renders held-out synthetic inputs as the model sees an upload (seeds its
training never used; the default ``n`` is the size of the fit split), and ``OOD_JPEG_QUALITY`` (optional) a JPEG
round trip every input goes through first. The feature statistics are fitted on one split (seeds from
``FIT_SEED0``) and the threshold set on another (``CALIB_SEED0``).

A capability whose data module also has ``ood_view(photo)`` (a photograph as its model sees an upload) is
calibrated on real photographs as well. The photos of ``ood.FIT_PHOTOS`` (each whole and as crops:
``ood.photo_views``) fit the direction that tells photos from the synthetic inputs (``ood.photo_direction``),
which the distance then weighs; scored cross-fitted (each photo by a direction fitted without it), they and the
synthetic calibration split choose the threshold (``ood.choose_threshold``: at most 1 − ``QUANTILE`` of the
synthetic inputs flagged) and the direction's weight (``PHOTO_WEIGHTS``). The photos of ``ood.HELD_OUT_PHOTOS``
are used for nothing of that: the AUROC of held-out synthetic inputs (seeds from ``TEST_SEED0``) against them,
and the shares of each flagged, go to the card.

Writes <capability>.safetensors and a card (README.md, metrics.json) into --out.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import time
from pathlib import Path

import numpy as np

from backends.common import ood

ROOT = Path(__file__).resolve().parents[1]
QUANTILE = 0.98
# seed ranges no training, validation, test or example set of any capability uses
FIT_SEED0, CALIB_SEED0, TEST_SEED0 = 5_000_000, 6_000_000, 7_000_000
N_CALIB = 400
N_TEST = 400  # held-out synthetic inputs the card's AUROC is measured on
N_FIT = 1000  # the fit split where a capability's ood_inputs does not say
# the photo coordinate's weight and the L2 penalty of its logistic regression: the pair with the best cross-fitted
# calibration (photos flagged less synthetic inputs flagged) is kept
PHOTO_WEIGHTS = (0.0, 1.0, 2.0, 3.0, 4.0, 6.0)
PHOTO_L2S = (0.001, 0.01, 0.1)


def capabilities() -> list[str]:
    """The capabilities whose embedded model has a synthetic domain (their spec names one)."""
    import backends

    return [s.name for s in backends.specs() if s.domain]


def data_module(capability: str):
    """``backends/<capability>/data.py``: its ``ood_inputs`` (and ``ood_view``, ``OOD_JPEG_QUALITY`` where it has
    them)."""
    return importlib.import_module(f"backends.{capability}.data")


def default_fit_size(capability: str) -> int:
    n = inspect.signature(data_module(capability).ood_inputs).parameters.get("n")
    return n.default if n is not None and isinstance(n.default, int) else N_FIT


def synthetic_features(capability: str, seed0: int, n: int) -> np.ndarray:
    """Features of ``n`` held-out synthetic inputs of ``capability`` from seed ``seed0``, taken as its score takes
    an upload's."""
    data = data_module(capability)
    images, masks = data.ood_inputs(seed0, n)
    return ood.features(images, masks, getattr(data, "OOD_JPEG_QUALITY", None))


def photo_features(capability: str, names) -> dict[str, np.ndarray]:
    """Photo name → features of its views (whole and crops), each as ``capability``'s model sees an upload."""
    data = data_module(capability)
    jpeg = getattr(data, "OOD_JPEG_QUALITY", None)
    return {name: ood.features([data.ood_view(v) for v in ood.photo_views(ood.photo(name))], None, jpeg)
            for name in names}


def calibrate_on_photos(fit: np.ndarray, calib: np.ndarray,
                        photos: dict[str, np.ndarray]) -> tuple[ood.DomainStats, dict]:
    """The statistics with the photo coordinate, its weight, its penalty and the threshold chosen on the calibration
    data: the synthetic calibration split and the fit photos scored cross-fitted (each by a direction fitted without
    it)."""
    names = list(photos)
    tried = []
    for l2 in PHOTO_L2S:
        for weight in PHOTO_WEIGHTS if l2 == PHOTO_L2S[0] else PHOTO_WEIGHTS[1:]:  # weight 0 ignores the penalty
            def direction(photo_features, weight=weight, l2=l2):
                return ood.photo_direction(fit, photo_features, weight, l2) if weight else None

            crossfit = [ood.fit_stats(fit, calib, QUANTILE, direction=direction(
                np.concatenate([photos[o] for o in names if o != name]))).distance(photos[name]) for name in names]
            stats = ood.fit_stats(fit, calib, QUANTILE, direction=direction(np.concatenate(list(photos.values()))))
            syn, real = stats.distance(calib), np.concatenate(crossfit)
            stats.threshold = ood.choose_threshold(syn, real, QUANTILE)
            flagged, false = float(np.mean(real > stats.threshold)), float(np.mean(syn > stats.threshold))
            tried.append({"weight": weight, "l2": l2 if weight else None, "youden_j": round(flagged - false, 4),
                          "photos_flagged": round(flagged, 4), "synthetic_flagged": round(false, 4), "stats": stats})
            print(f"  photo weight {weight:g}, L2 {l2:g}: cross-fitted fit photos flagged {flagged:.3f}, "
                  f"calibration synthetic flagged {false:.3f}")
    best = max(tried, key=lambda t: (t["youden_j"], -t["weight"], t["l2"] or 0))  # a tie: the smaller weight
    report = {"photo_weight": best["weight"], "photo_l2": best["l2"],
              "fit_photos": {name: len(photos[name]) for name in names},
              "calibration": {"cross_fitted_photos_flagged": best["photos_flagged"],
                              "synthetic_flagged": best["synthetic_flagged"],
                              "tried": [{k: v for k, v in t.items() if k != "stats"} for t in tried]}}
    return best["stats"], report


def held_out_report(capability: str, stats: ood.DomainStats) -> dict:
    """AUROC of held-out synthetic inputs against the held-out photos (never fitted on or calibrated with), and
    the shares flagged; each held-out photo whole, as a person uploads it."""
    syn = stats.distance(synthetic_features(capability, TEST_SEED0, N_TEST))
    photos = photo_features(capability, ood.HELD_OUT_PHOTOS)
    real = stats.distance(np.concatenate(list(photos.values())))
    whole = {name: round(float(stats.distance(f[:1])[0]), 3) for name, f in photos.items()}
    return {"test_seeds_from": TEST_SEED0, "synthetic": len(syn), "photos": list(photos), "photo_views": len(real),
            "auroc": round(ood.auroc(syn, real), 4), "photos_flagged": round(float(np.mean(real > stats.threshold)), 4),
            "synthetic_flagged": round(float(np.mean(syn > stats.threshold)), 4), "whole_photo_distance": whole}


def main(argv=None) -> int:
    caps = capabilities()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-fit", type=int, help="fit inputs (default: each capability's ood_inputs default)")
    p.add_argument("--n-calib", type=int, default=N_CALIB)
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "ood-calibration")
    p.add_argument("--only", choices=caps, action="append")
    args = p.parse_args(argv)
    metrics = {}
    metrics_path = args.out / "metrics.json"
    if metrics_path.is_file():
        metrics = json.loads(metrics_path.read_text())
    for cap in args.only or caps:
        start = time.perf_counter()
        data = data_module(cap)
        fit = synthetic_features(cap, FIT_SEED0, args.n_fit or default_fit_size(cap))
        calib = synthetic_features(cap, CALIB_SEED0, args.n_calib)
        meta = {"capability": cap, "n_fit": len(fit), "n_calib": len(calib), "quantile": QUANTILE,
                "fit_seeds_from": FIT_SEED0, "calib_seeds_from": CALIB_SEED0}
        if hasattr(data, "ood_view"):
            print(f"{cap}: calibrating on {len(ood.FIT_PHOTOS)} photographs (+ crops) …")
            stats, photo_meta = calibrate_on_photos(fit, calib, photo_features(cap, ood.FIT_PHOTOS))
            meta.update(photo_meta)
        else:
            stats = ood.fit_stats(fit, calib, QUANTILE)
        stats.jpeg_quality = getattr(data, "OOD_JPEG_QUALITY", None)
        stats.meta = meta
        path = stats.save(args.out / f"{cap}.safetensors")
        metrics[cap] = {**meta, "jpeg_quality": stats.jpeg_quality, "threshold": round(stats.threshold, 3),
                        "calib_median_distance": round(float(np.median(stats.distance(calib))), 3)}
        if hasattr(data, "ood_view"):
            metrics[cap]["held_out"] = held_out_report(cap, stats)
            print(f"  held out: AUROC {metrics[cap]['held_out']['auroc']:.4f}, photo views flagged "
                  f"{metrics[cap]['held_out']['photos_flagged']:.3f}, synthetic flagged "
                  f"{metrics[cap]['held_out']['synthetic_flagged']:.3f}")
        metrics[cap]["seconds"] = round(time.perf_counter() - start, 1)
        print(f"{cap}: threshold {stats.threshold:.2f} ({len(fit)} fit, {len(calib)} calibration inputs) → {path}")
    args.out.mkdir(parents=True, exist_ok=True)
    metrics_path.write_text(json.dumps({"features": list(ood.FEATURE_NAMES), **metrics}, indent=1) + "\n")
    (args.out / "README.md").write_text(card(metrics))
    return 0


def card(metrics: dict) -> str:
    caps = [c for c in metrics if c != "features"]
    rows = "\n".join(f"| {cap} | {m['n_fit']} | {m['n_calib']} | {m['threshold']:.2f} | {m['calib_median_distance']:.2f} "
                     f"| {format(m['photo_weight'], 'g') if 'photo_weight' in m else '— (no photos)'} |"
                     for cap, m in metrics.items() if cap in caps)
    held = "\n".join(
        f"| {cap} | {h['auroc']:.4f} | {h['photos_flagged']:.1%} of {h['photo_views']} | "
        f"{h['synthetic_flagged']:.1%} of {h['synthetic']} | "
        + ", ".join(f"{n.split('.')[0]} {d:.2f}" for n, d in h["whole_photo_distance"].items()) + " |"
        for cap, m in metrics.items() if cap in caps and (h := m.get("held_out")))
    licences = "\n".join(f"| {name} | {'held out' if name in ood.HELD_OUT_PHOTOS else 'fit / calibration'} | {lic} |"
                         for name, lic in ood.PHOTOS.items())
    return f"""# ood-calibration

Out-of-domain statistics of the embedded models that take uploads — how far an upload is from the
synthetic world a model was trained on (`backends/common/ood.py`). Written by
`python -m training.ood_calibration` for every capability whose spec names a domain.

- **Features** ({len(ood.FEATURE_NAMES)}): natural-image statistics of the input *as the model sees it* (its
  working size; Avatar: the uploaded view whole, its background included) — exactly-flat and
  small-gradient fractions, gradient magnitude and kurtosis, Laplacian and median-residual energy, flat 4×4 blocks,
  distinct colours, saturation, chroma residual, spectral slope, contrast, edge density, planar fraction, hue
  concentration, foreground fraction, one-pixel step edges, grey fraction.
- **Score:** the mean Euclidean distance of the standardized features to the 5 nearest *fit* inputs
  (held-out synthetic inputs; the worlds are mixtures, which a nearest-neighbour distance follows
  better than one Gaussian). A clip or a set of views scores the median over its frames / views.
  Where a capability is calibrated on photographs (Video Depth), one more coordinate: the features' projection
  on the direction that tells the fit photographs from the synthetic inputs (an L2 logistic regression),
  weighted by the *photo weight* below (in standard deviations of the synthetic inputs along it).
- **Data:** held-out synthetic inputs from each capability's own generator (`backends/<name>/data.py`,
  `ood_inputs`) at seeds its training, validation, test and example sets never use (fit from
  {FIT_SEED0:,}, calibration from {CALIB_SEED0:,}, held-out test from {TEST_SEED0:,}): Counterfactual
  `make_example` (32×32), Video Depth `render_clip` (2 frames of each 6-frame clip, 64×64, every other clip
  through H.264 as an uploaded video arrives, every frame through one JPEG round trip at quality 95 — uploads
  too), Avatar `sample_subject` (views at 64 and at 128 resized like an upload, scored whole).
- **Threshold:** without photographs, the {QUANTILE:.0%} quantile of the calibration inputs' scores, so about
  {1 - QUANTILE:.0%} of true synthetic inputs are flagged by construction. With photographs (Video Depth): among
  the thresholds that flag at most {1 - QUANTILE:.0%} of the synthetic calibration inputs, the one with the
  largest share of *fit* photographs flagged (scored cross-fitted: each photo by a direction fitted without it)
  less the share of synthetic inputs flagged; the photo weight (among {", ".join(f"{w:g}" for w in PHOTO_WEIGHTS)})
  and the regression's L2 penalty (among {", ".join(f"{w:g}" for w in PHOTO_L2S)}) are chosen the same way. No
  held-out photograph is used for any of it.

| capability | fit inputs | calibration inputs | threshold | median calibration score | photo weight |
|---|---|---|---|---|---|
{rows}

## Held out (never fitted on, never calibrated with)

Held-out synthetic inputs (the test seeds) against the held-out photographs, each whole and as
{ood.PHOTO_CROPS} crops, scored as an upload is (shares per frame; a clip scores the median of up to 8 of its
frames), and the distance of each held-out photo whole, as a person uploads it (the threshold is in the table
above).

| capability | AUROC | photo views flagged | synthetic inputs flagged | whole photos: distance |
|---|---|---|---|---|
{held}

The photographs ship with scikit-image and matplotlib; licences as their documentation states them:

| photo | split | licence |
|---|---|---|
{licences}

- **Measured for all three:** `python -m bench.realinputs` → `bench/results/realinputs.json` (AUROC against every
  photo above, fit ones included for Video Depth, so its figure there is not a held-out one).
- **Cannot:** tell a *wrong* synthetic input from a right one, nor judge a photo's content: it measures
  low-level image statistics. A render saved as a lossy JPEG, or a photo of a flat-shaded toy scene,
  can land on the other side; there are few photographs to calibrate on ({len(ood.FIT_PHOTOS)}, with crops), so a
  kind of photo none of them resembles may pass.
"""


if __name__ == "__main__":
    raise SystemExit(main())
