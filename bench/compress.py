"""Basis Sharing vs per-layer SVD-LLM-style whitened SVD vs plain SVD on SmolLM2-135M-Instruct, one run.

Same model (the suite's embedded SmolLM2-135M-Instruct, its Q4_1 GGUF de-quantised to float32), same
calibration (the Gram matrices of the original model over the first 32 blocks of 512 tokens of the standard-library
docstrings text), same ratios. Perplexity on the first windows of *The Devil's Dictionary* (Bierce,
public domain, shipped in ``assets/compress-texts``), never the calibration text. Deterministic:
consecutive blocks from the start of each text, greedy generation. Every model at the main ratios is
then healed with the same LoRA budget (steps × blocks of the calibration text, rank, lr, seed 0 for
LoRA's initial draw) and scored again (``ppl_after_heal`` in the details). Then the ablation at 40 %:
which types share, group sizes 2/3/4, the coefficient refit on/off.

    python -m bench.compress [--quick]

On a busy machine the full run can be split over processes (each one thread) and merged; the parts share one
calibration through --gram-cache (the first part to need it computes it):
    python -m bench.compress --ratios 10,20,30 --no-ablation --part a --gram-cache /tmp/grams.pt
    python -m bench.compress --ratios 40,50 --no-ablation --part b --gram-cache /tmp/grams.pt
    python -m bench.compress --ratios none --part c --gram-cache /tmp/grams.pt   # the ablation only
    python -m bench.compress --merge a b c                    # compress.json from the parts
The quick run of the results (--quick, ratios 30/50 with the heal, then the ablation in a second process):
    python -m bench.compress --quick --ratios 30,50 --no-ablation --part quick-a
    python -m bench.compress --quick --ratios none --extra q,up,gate:2:0@40 --part quick-b
    python -m bench.compress --merge quick-a quick-b --quick
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import torch

from backends.common.causal_lm import load_causal_lm
from backends.compress.calibrate import blocks
from backends.compress.evaluate import perplexity, tokens_per_second
from backends.compress.heal import HealBudget, heal, heal_blocks
from backends.compress.pipeline import DEFAULT_GROUP, DEFAULT_SHARED, calibrate, compress, original_summary
from backends.compress.texts import load_text, token_ids
from bench.report import RESULTS, markdown_table, write_results

MODEL = "smollm2-135m-instruct"
EVAL_TEXT, CAL_TEXT = "devils-dictionary", "stdlib-docstrings"
HEAL_STEPS, HEAL_STEPS_QUICK, HEAL_RANK, HEAL_LR = 20, 20, 8, 5e-4  # the same budget for every method
ABLATION = [  # (shared types, group size, refit)
    (DEFAULT_SHARED, 2, False), (DEFAULT_SHARED, 2, True), (DEFAULT_SHARED, 3, False), (DEFAULT_SHARED, 4, False),
    (("q", "k", "v", "up", "gate"), 2, False), (("up", "gate"), 2, False),
    (("q", "k", "v", "o", "up", "gate", "down"), 2, False), (("q", "k", "v", "up", "gate"), 2, True),
]


def cached_calibration(name: str, model, pieces, cache: str | None):
    """(Gram matrices, seconds of the calibration that made them); ``cache`` keeps them for the run's other parts."""
    from pathlib import Path

    key = {"model": name, "text": CAL_TEXT, "blocks": [x.numel() for x in pieces]}
    if cache and Path(cache).is_file():
        saved = torch.load(cache, weights_only=False)
        if saved["key"] == key:
            return saved["grams"], saved["seconds"]
    grams, seconds = calibrate(model, pieces)
    if cache:
        torch.save({"key": key, "grams": grams, "seconds": seconds}, cache)
    return grams, seconds


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 ratios, fewer tokens, 6 ablation runs")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--model", default=MODEL)
    p.add_argument("--ratios", help="comma-separated percents (default: all), or 'none'")
    p.add_argument("--no-ablation", action="store_true")
    p.add_argument("--heal-steps", type=int, help="LoRA heal steps for every model at the main ratios (default: "
                   f"{HEAL_STEPS}, quick {HEAL_STEPS_QUICK}; 0: no heal)")
    p.add_argument("--extra", nargs="*", default=[], metavar="TYPES:GROUP:REFIT@RATIO",
                   help="extra Basis Sharing runs, e.g. up,gate:2:0@50 (kept in the details)")
    p.add_argument("--part", help="write this part's runs to compress-part-<PART>.json instead of the results")
    p.add_argument("--gram-cache", help="a file for the calibration's Gram matrices: computed and saved if it is "
                   "missing, loaded if it is there (parts of one run share one calibration)")
    p.add_argument("--merge", nargs="+", metavar="PART", help="merge parts (a part 'partial' is compress-partial.json)")
    a = p.parse_args(argv)
    if a.merge:
        return merge(a.merge, a.quick)
    torch.set_num_threads(a.threads)
    # Calibration: 2,048 tokens (4 blocks) left the Gram matrices of 576- and 1,536-wide inputs nearly singular, and
    # the whitened SVDs kept only the directions those tokens used (10 % cost 13× the perplexity on the evaluation
    # text); 16 k tokens (the authors use 256 × 2,048 of WikiText) is what one CPU calibrates in minutes.
    if a.quick:
        ratios, cal_blocks, block, eval_windows, ablation = [30, 50], 16, 256, 4, ABLATION[:6]
    else:
        ratios, cal_blocks, block, eval_windows, ablation = [10, 20, 30, 40, 50], 32, 512, 8, ABLATION[:6]
    if a.ratios:
        ratios = [] if a.ratios == "none" else [int(r) for r in a.ratios.split(",")]
    if a.no_ablation:
        ablation = []
    t_start = time.perf_counter()
    tok, model = load_causal_lm(a.model)
    cal_ids = token_ids(tok, load_text(CAL_TEXT))
    eval_ids = token_ids(tok, load_text(EVAL_TEXT))
    steps = a.heal_steps if a.heal_steps is not None else (HEAL_STEPS_QUICK if a.quick else HEAL_STEPS)
    budget = HealBudget(steps, HEAL_RANK, HEAL_LR) if steps > 0 else None
    heal_pieces = heal_blocks(cal_ids, block, steps) if budget else []
    pieces = blocks(cal_ids, block, cal_blocks)
    windows = blocks(eval_ids, block, eval_windows)
    partial = RESULTS / (f"compress-part-{a.part}.json" if a.part
                         else "compress-quick-partial.json" if a.quick else "compress-partial.json")
    out: dict = {"model": a.model, "ratios": ratios, "ppl_basis_sharing": {}, "ppl_svd_llm": {}, "ppl_svd": {},
                 "eval_tokens": sum(w.numel() - 1 for w in windows),
                 "calibration_tokens": sum(x.numel() for x in pieces), "compress_seconds": {}, "ablation": []}
    details: dict = {"runs": [], "block": block, "eval_windows": len(windows), "calibration_blocks": len(pieces),
                     "threads": a.threads, "quick": a.quick, "eval_text": EVAL_TEXT, "calibration_text": CAL_TEXT,
                     "heal": budget and {**budget.to_dict(), "tokens": sum(x.numel() for x in heal_pieces)}}

    def checkpoint():
        partial.write_text(json.dumps({**out, "details": details}, indent=1) + "\n")

    out["ppl_original"] = perplexity(model, windows)
    details["original"] = {**original_summary(model), "ppl": out["ppl_original"],
                           "tokens_per_s": tokens_per_second(model, tok)}
    grams, cal_s = cached_calibration(a.model, model, pieces, a.gram_cache)
    details["calibration_seconds"] = cal_s
    checkpoint()
    print(f"original ppl {out['ppl_original']:.2f}; calibration {cal_s:.0f} s", flush=True)

    def run(method, ratio, shared=DEFAULT_SHARED, group=DEFAULT_GROUP, do_refit=False, do_heal=False):
        c = compress(model, method, ratio / 100, grams, pieces, shared, group, do_refit)
        ppl = perplexity(c.model, windows)
        rec = {"method": method, "ratio": ratio, "shared": list(c.plan.shared), "group_size": c.plan.group_size,
               "refit": c.plan.refit, "ppl": ppl, "seconds": c.seconds, "params": c.params,
               "linear_params": c.linear_params, "bytes": c.bytes,
               "tokens_per_s": tokens_per_second(c.model, tok)}
        if do_heal and budget:
            healed = heal(c.model, heal_pieces, budget)
            rec["ppl_healed"] = perplexity(healed["model"], windows)
            rec["heal"] = {"seconds": healed["seconds"], "trainable": healed["trainable"],
                           "first_loss": healed["losses"][0], "last_loss": healed["losses"][-1]}
        details["runs"].append(rec)
        print(json.dumps(rec), flush=True)
        del c
        return rec

    for ratio in ratios:
        key = str(ratio)
        for method, field in (("basis_sharing", "ppl_basis_sharing"), ("svd_llm", "ppl_svd_llm"), ("svd", "ppl_svd")):
            rec = run(method, ratio, do_heal=True)
            out[field][key] = rec["ppl"]
            if method == "basis_sharing":
                out["compress_seconds"][key] = cal_s + rec["seconds"]
        checkpoint()
    for spec in a.extra:
        how, ratio = spec.split("@")
        types, group, do_refit = how.split(":")
        run("basis_sharing", int(ratio), tuple(types.split(",")), int(group), do_refit == "1")
        checkpoint()
    ab_ratio = 40
    for shared, group, do_refit in ablation:
        same = [r for r in details["runs"] if r["method"] == "basis_sharing" and r["ratio"] == ab_ratio
                and r["shared"] == list(shared) and r["group_size"] == group and r["refit"] == do_refit]
        if not same and a.part and (shared, group, do_refit) == (DEFAULT_SHARED, DEFAULT_GROUP, False):
            continue  # the default run is the main part's
        rec = same[0] if same else run("basis_sharing", ab_ratio, shared, group, do_refit)
        out["ablation"].append({k: rec[k] for k in ("shared", "group_size", "refit", "ratio", "ppl")})
        checkpoint()
    details["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    details["bench_minutes"] = (time.perf_counter() - t_start) / 60
    if a.part:
        checkpoint()
        print(f"part {a.part} written to {partial}")
        return 0
    return finish(out, details, ratios, a.quick)


def merge(parts: list[str], quick: bool) -> int:
    """One results file from the parts' runs (the same model, texts and sizes in each part)."""
    loaded = [json.loads((RESULTS / ("compress-partial.json" if p == "partial" else f"compress-part-{p}.json"))
                         .read_text()) for p in parts]
    first = loaded[0]
    for other in loaded[1:]:
        for key in ("model", "eval_tokens", "calibration_tokens", "ppl_original"):
            if other[key] != first[key]:
                raise SystemExit(f"parts differ in {key}: {first[key]} vs {other[key]}")
    out = {k: first[k] for k in ("model", "eval_tokens", "calibration_tokens", "ppl_original")}
    runs = [r for part in loaded for r in part["details"]["runs"]]
    details = {**first["details"], "runs": runs, "parts": parts,
               "part_minutes": [p["details"].get("bench_minutes") for p in loaded],
               "peak_rss_mb": max(p["details"].get("peak_rss_mb", 0) for p in loaded)}
    details.pop("bench_minutes", None)
    main_runs = [r for r in runs if r["shared"] in (list(DEFAULT_SHARED), []) and r["group_size"] in (DEFAULT_GROUP, 1)
                 and not r["refit"]]
    ratios = sorted({r["ratio"] for r in main_runs if r["method"] == "svd"})
    out["ratios"] = ratios
    for method, field in (("basis_sharing", "ppl_basis_sharing"), ("svd_llm", "ppl_svd_llm"), ("svd", "ppl_svd")):
        out[field] = {str(r["ratio"]): r["ppl"] for r in main_runs if r["method"] == method and r["ratio"] in ratios}
    cal_s = first["details"]["calibration_seconds"]
    out["compress_seconds"] = {str(r["ratio"]): cal_s + r["seconds"] for r in main_runs
                               if r["method"] == "basis_sharing" and r["ratio"] in ratios}
    out["ablation"] = []
    for shared, group, do_refit in ABLATION:
        same = [r for r in runs if r["method"] == "basis_sharing" and r["ratio"] == 40 and r["shared"] == list(shared)
                and r["group_size"] == group and r["refit"] == do_refit]
        if same:
            out["ablation"].append({k: same[0][k] for k in ("shared", "group_size", "refit", "ratio", "ppl")})
    return finish(out, details, ratios, quick)


def finish(out: dict, details: dict, ratios: list[int], quick: bool) -> int:
    big = [r for r in ratios if r >= 30]
    out["claim_holds"] = bool(big) and all(out["ppl_basis_sharing"][str(r)] < out["ppl_svd_llm"][str(r)] for r in big)
    gaps = [out["ppl_svd_llm"][str(r)] - out["ppl_basis_sharing"][str(r)] for r in big]
    details["gap_svd_llm_minus_basis_sharing"] = dict(zip(map(str, big), gaps, strict=True))
    details["gap_grows"] = all(b > a for a, b in zip(gaps, gaps[1:], strict=False))
    healed = {m: {str(r["ratio"]): r["ppl_healed"] for r in details["runs"] if r["method"] == m and "ppl_healed" in r
                  and r["shared"] in (list(DEFAULT_SHARED), []) and r["group_size"] in (DEFAULT_GROUP, 1)
                  and not r["refit"] and r["ratio"] in ratios} for m in ("basis_sharing", "svd_llm", "svd")}
    if any(healed.values()):
        details["ppl_after_heal"] = healed
    name = "compress-quick" if quick else "compress"
    path = RESULTS / f"{name}.json"  # exactly the keys; where and when it ran go to the details
    path.write_text(json.dumps(out, indent=2) + "\n")
    details.update({k: v for k, v in json.loads(write_results(f"{name}-details", {}).read_text()).items()})
    (RESULTS / f"{name}-details.json").write_text(json.dumps(details, indent=1) + "\n")
    rows = [[r] + [out[f][str(r)] for f in ("ppl_basis_sharing", "ppl_svd_llm", "ppl_svd")] for r in ratios]
    print(markdown_table(["ratio %", "Basis Sharing", "SVD-LLM", "SVD"], rows))
    print(markdown_table(["shared", "group", "refit", "ratio", "ppl"],
                         [[",".join(r["shared"]), r["group_size"], r["refit"], r["ratio"], r["ppl"]]
                          for r in out["ablation"]]))
    if any(healed.values()):
        print("after the LoRA heal (" + json.dumps(details.get("heal")) + "):")
        print(markdown_table(["ratio %", "Basis Sharing", "SVD-LLM", "SVD"],
                             [[r] + [healed[m].get(str(r)) for m in ("basis_sharing", "svd_llm", "svd")]
                              for r in ratios]))
    print(f"original {out['ppl_original']:.2f}; claim_holds={out['claim_holds']}; wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
