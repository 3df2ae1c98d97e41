"""RCSB vs two baselines on held-out embedded-domain images, same images, same regions, one run.

For every source → target pair of shapes, each method edits the object's box region (dilated by
one pixel) of the same test images:
  - RCSB: Tweedie x̂0 guidance back through the bridge, Adam stabilisation, first-gradient norm,
    hard region constraint (the published sampler);
  - (a) classifier guidance on the noisy x_t: same bridge and classifier, no Tweedie, no
    stabilisation (its scale is swept, and its best flip rate is the reported baseline);
  - (b) unconstrained: the RCSB sampler with the region = the whole image.
RCSB runs at the tab's default guidance scale (the reported ``flip_rate``) and over a scale sweep.
Columns: flip rate, the largest |change| outside the region (0-255, over all images), the mean one, L1 inside the region, a Fréchet distance of
the counterfactuals to real test images of the target class on the project's classifier features
(not Inception FID), seconds per counterfactual.

No measurement here is a user action: every method is the pipeline called directly on a batch of images
(the baselines — noisy-x_t guidance, the whole image as region, no guidance — are no action, and RCSB is
run batched with the others' seeds to compare like with like). The models are the ones the user action
``counterfactual_generate`` loads for its default request (``bench.actions.load_model``).

    python -m bench.counterfactual [--quick]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from backends.common.imageio import to_uint8
from backends.counterfactual.data import CLASSES, cached_split
from backends.counterfactual.masks import dilate
from backends.counterfactual.metrics import classifier_features, frechet_distance
from backends.counterfactual.service import CounterfactualRequest, probabilities
from bench.actions import load_model
from bench.report import markdown_table, write_results

ROOT = Path(__file__).resolve().parents[1]


def run_method(models, images: np.ndarray, masks: np.ndarray, target: int, steps: int, seed: int,
               guidance: str, stabilize: bool, scale: float, tau: float = 0.6) -> tuple[np.ndarray, float]:
    pipe = models.pipeline
    x = torch.from_numpy(images).permute(0, 3, 1, 2).float().to(models.device) / 127.5 - 1
    m = torch.from_numpy(masks[:, None].astype(np.float32)).to(models.device)
    start = time.perf_counter()
    out = pipe(x, m, target, num_inference_steps=steps, guidance_scale=scale, guidance=guidance, start_fraction=tau,
               stabilize=stabilize, generator=torch.Generator().manual_seed(seed))
    seconds = time.perf_counter() - start
    result = to_uint8(out.images)
    result = np.where(masks[..., None], result, images)  # what the service returns: input outside, bit for bit
    return result, seconds


def evaluate(models, method: dict, data: dict, per_pair: int, steps: int, real_feats: dict) -> dict:
    flips, outside, inside, secs, feats_by_target, n, outside_max = [], [], [], 0.0, {}, 0, 0
    for t, target in enumerate(CLASSES):
        idx = np.concatenate([np.flatnonzero(data["labels"] == s)[:per_pair] for s in range(len(CLASSES)) if s != t])
        images = data["images"][idx]
        region = np.stack([dilate(b, 1) for b in data["box_masks"][idx]])
        masks = np.ones_like(region) if method["unconstrained"] else region
        out, sec = run_method(models, images, masks, t, steps, seed=t, guidance=method["guidance"],
                              stabilize=method["stabilize"], scale=method["scale"], tau=method.get("tau", 0.6))
        secs += sec
        n += len(idx)
        probs = probabilities(models, out)
        flips.extend(probs.argmax(1) == t)
        absdiff = np.abs(out.astype(int) - images.astype(int))  # 0..255 per channel
        outside_max = max(outside_max, int(np.where(region[..., None], 0, absdiff).max()))
        diff = absdiff.mean(-1) / 255.0
        outside.extend(diff[k][~region[k]].mean() for k in range(len(idx)))
        inside.extend(diff[k][region[k]].mean() for k in range(len(idx)))
        feats_by_target[target] = classifier_features(models.pipeline.classifier, out)
    fids = [frechet_distance(feats_by_target[c], real_feats[c]) for c in CLASSES]
    return {"flip_rate": float(np.mean(flips)), "outside_change": float(np.mean(outside)), "outside_change_max": outside_max,
            "inside_l1": float(np.mean(inside)), "fid_classifier_features": float(np.mean(fids)),
            "seconds_per_cf": secs / n, "n": n}


SWEEPS = {  # guidance scales per method; "defaults": RCSB at the tab's scale, the baseline at its best one
    "full": {"rcsb": (1.5, 4.0, 8.0, 32.0), "noisy": (1.0, 10.0, 30.0, 100.0), "none": True},
    "quick": {"rcsb": (1.5, 4.0), "noisy": (10.0, 30.0), "none": True},
    "defaults": {"rcsb": (), "noisy": (10.0,), "none": False},  # s=10 was the best of 1/10/30/100 in both sweeps
}


def methods_for(sweep: str) -> list[dict]:
    """RCSB at the tab's default scale, then a guidance-scale sweep per method (the baseline gets its best)."""
    default = CounterfactualRequest(image=None, mask=None, target=0)
    rcsb = {"guidance": "tweedie", "stabilize": True, "tau": default.start_fraction, "unconstrained": False}
    rcsb_scales, noisy_scales = SWEEPS[sweep]["rcsb"], SWEEPS[sweep]["noisy"]  # s=1 flipped 0.26 in the full run
    no_guidance = [{"name": "no guidance (bridge only, region)", "role": "none", **rcsb, "guidance": "none",
                    "scale": 0.0}] if SWEEPS[sweep]["none"] else []
    return [
        {"name": f"RCSB (Tweedie + Adam + norm, region), s={default.guidance_scale:g} (default)", "role": "rcsb",
         **rcsb, "scale": default.guidance_scale},
        *[{"name": f"RCSB, s={s:g}", "role": "rcsb-sweep", **rcsb, "scale": s}
          for s in rcsb_scales if s != default.guidance_scale],
        *[{"name": f"(a) noisy-x_t guidance, s={s:g}", "role": "plain", "guidance": "noisy", "stabilize": False,
           "scale": s, "tau": default.start_fraction, "unconstrained": False} for s in noisy_scales],
        {"name": f"(b) unconstrained (whole image), s={default.guidance_scale:g}", "role": "unconstrained", **rcsb,
         "scale": default.guidance_scale, "unconstrained": True},
        *no_guidance,
    ]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 images per pair, 30 network calls, a smaller sweep")
    p.add_argument("--per-pair", type=int, help="images per source → target pair (default 10; quick 2)")
    p.add_argument("--steps", type=int, help="network calls per counterfactual (default 100, the paper's; quick 30)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (1: on a busy 2-core machine two threads spin and run ~10× slower)")
    p.add_argument("--sweep", choices=tuple(SWEEPS), help="guidance scales tried per method (default: full; quick "
                   "quick); 'defaults' runs only RCSB at the tab's scale, the baseline at s=10 and the unconstrained run")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    per_pair, steps = (2, 30) if args.quick else (10, 100)
    per_pair, steps = args.per_pair or per_pair, args.steps or steps
    t0 = time.perf_counter()
    models = load_model("counterfactual_generate", CounterfactualRequest(image=None, mask=None, target=0))
    data = cached_split("test", ROOT / "training" / "data")
    real_feats = {c: classifier_features(models.pipeline.classifier, data["images"][data["labels"] == i][:300])
                  for i, c in enumerate(CLASSES)}
    sweep = args.sweep or ("quick" if args.quick else "full")
    methods = methods_for(sweep)
    rows, results = [], {}
    for m in methods:
        r = evaluate(models, m, data, per_pair, steps, real_feats)
        results[m["name"]] = {**r, **{k: m[k] for k in ("role", "guidance", "stabilize", "scale", "tau", "unconstrained")}}
        rows.append([m["name"], r["flip_rate"], r["outside_change_max"], r["outside_change"], r["inside_l1"],
                     r["fid_classifier_features"], r["seconds_per_cf"], r["n"]])
        print(f"done: {m['name']}: flip rate {r['flip_rate']:.2f}", flush=True)
    print(markdown_table(["method", "flip rate", "max |Δ| outside (0-255)", "mean |Δ| outside region",
                          "L1 inside region", "Fréchet dist. (classifier feats)", "s / counterfactual", "n"], rows))
    by_role = lambda role: [v for v in results.values() if v["role"] == role]  # noqa: E731
    rcsb = by_role("rcsb")[0]
    best_sweep = max(by_role("rcsb") + by_role("rcsb-sweep"), key=lambda v: v["flip_rate"])
    plain = max(by_role("plain"), key=lambda v: v["flip_rate"])  # the baseline at its best scale
    unconstrained = by_role("unconstrained")[0]
    payload = {
        "quick": args.quick, "per_pair": per_pair, "steps": steps, "n": rcsb["n"], "sweep": sweep,
        "models": {"bridge": models.bridge_id, "classifier": models.classifier_id},
        "flip_rate": rcsb["flip_rate"], "outside_change_max": rcsb["outside_change_max"], "scale": rcsb["scale"],
        "tau": rcsb["tau"],
        "baseline_plain_guidance_flip_rate": plain["flip_rate"], "baseline_plain_guidance_scale": plain["scale"],
        "baseline_plain_guidance_outside_change_max": plain["outside_change_max"],
        "baseline_unconstrained_flip_rate": unconstrained["flip_rate"],
        "baseline_unconstrained_outside_change_max": unconstrained["outside_change_max"],
        "rcsb_best_sweep_flip_rate": best_sweep["flip_rate"], "rcsb_best_sweep_scale": best_sweep["scale"],
        "goal_flip_rate": 0.9, "methods": results, "bench_minutes": (time.perf_counter() - t0) / 60,
    }
    path = write_results("counterfactual", payload)
    print(f"counterfactual: RCSB (s={rcsb['scale']:g}) flips {rcsb['flip_rate']:.0%} of {rcsb['n']} (goal ≥ 90%) with "
          f"max outside change {rcsb['outside_change_max']} (goal 0) vs plain noisy-x_t guidance at its best "
          f"{plain['flip_rate']:.0%} (s={plain['scale']:g}) and unconstrained {unconstrained['flip_rate']:.0%} "
          f"(max outside change {unconstrained['outside_change_max']}); wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
