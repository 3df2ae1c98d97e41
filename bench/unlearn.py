"""SFD vs the ESD-style and SalUn fine-tuning baselines vs sampling-time negative guidance vs the plain teacher, on the
shipped teacher and the shipped networks of the default forget choices, measured side by side in one run. A method
with no shipped network for a choice (SalUn before its networks are trained) is skipped for that choice, said on
stdout and in the details JSON, and has no key in the results' method dicts.

For each forget choice (forget → safe), the same noise (one seed) goes through every method for every class; the
suite's shape classifier reads each image. Per method:
  - forget rate: the share of samples asked for the forgotten class that the classifier reads as it (goal ≤ 0.05);
  - retained accuracy: the share of samples asked for any other class read as that class (goal within 0.03 of the
    teacher's);
  - retained FD: the Fréchet distance on the classifier's penultimate features between the samples of the other
    classes and held-out renders of those classes (not Inception FID; goal ≤ 1.2× the teacher's);
  - seconds per image: wall-clock of drawing the whole batch on this CPU, divided by its size.
Rates carry 95% Wilson intervals and their sample sizes. The paper's claim tested: SFD forgets as well as the best
baseline while keeping the other classes better, and samples ≥ 10× faster than the teacher.

The numbers come from the tab's own evaluation (``backends/unlearn/evaluate.py``, the ``unlearn_evaluate`` action's
work) run on the models the action loads.

    python -m bench.unlearn [--quick]

Writes ``bench/results/unlearn.json`` with exactly the issue's keys and ``bench/results/unlearn-details.json``.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from backends.common.progress import run_to_result
from backends.unlearn.classes import DEFAULT_CHOICES
from backends.unlearn.evaluate import evaluate
from backends.unlearn.requests import EvaluateRequest
from backends.unlearn.sampling import METHODS
from bench.actions import load_model
from bench.report import RESULTS, markdown_table

KEYS = ("forget_rate", "retained_accuracy", "retained_fd", "teacher_accuracy", "seconds_per_image", "speedup_one_step",
        "n_samples")


def choice_key(forget: str, safe: str) -> str:
    return f"{forget}->{safe}"


def run(per_class: int, teacher_steps: int, seed: int) -> tuple[dict, dict]:
    out = {k: {m: {} for m in METHODS} for k in ("forget_rate", "retained_accuracy", "retained_fd")}
    seconds = {m: [] for m in METHODS}
    teacher_acc, details, skipped = {}, {}, {}
    for forget, safe in DEFAULT_CHOICES:
        req = EvaluateRequest(forget=forget, safe=safe, per_class=per_class, teacher_steps=teacher_steps, seed=seed)
        models = load_model("unlearn_evaluate", req)
        res = run_to_result(evaluate(req, models))
        key = choice_key(forget, safe)
        skipped.update({f"{m} {key}": why for m, why in res.skipped.items()})
        for m in res.methods:
            x = res.metrics[m]
            out["forget_rate"][m][key] = x["forget_rate"]
            out["retained_accuracy"][m][key] = x["retained_accuracy"]
            out["retained_fd"][m][key] = round(x["retained_fd"], 4)
            seconds[m].append(x["seconds_per_image"])
        teacher_acc[key] = res.metrics["teacher"]["all_accuracy"]
        details[key] = {"n_reference_renders": res.n_reference, "per_class_predictions": {
            m: {c: np.bincount(res.predictions[m][res.labels == i], minlength=5).tolist()
                for i, c in enumerate(("cube", "sphere", "cylinder", "cone", "torus"))} for m in res.methods}}
    secs = {m: float(np.mean(v)) for m, v in seconds.items() if v}
    payload = {**out, "teacher_accuracy": teacher_acc, "seconds_per_image": secs,
               "speedup_one_step": secs["teacher"] / secs["sfd"],
               "n_samples": {"per_class_per_method": per_class, "per_choice_per_method": 5 * per_class,
                             "forget_requests": per_class, "retained_requests": 4 * per_class,
                             "choices": [choice_key(f, s) for f, s in DEFAULT_CHOICES], "teacher_ddim_steps": teacher_steps,
                             "reference_renders": {k: v["n_reference_renders"] for k, v in details.items()}}}
    return payload, {**details, "skipped": skipped}


def claims(p: dict) -> dict:
    """The paper's claim and the issue's goals, per forget choice: held or not, from the numbers above."""
    out = {}
    for key in p["n_samples"]["choices"]:
        fr = {m: p["forget_rate"][m][key]["value"] for m in p["forget_rate"] if key in p["forget_rate"][m]}
        ra = {m: p["retained_accuracy"][m][key]["value"] for m in p["retained_accuracy"] if key in p["retained_accuracy"][m]}
        fd = {m: p["retained_fd"][m][key] for m in p["retained_fd"] if key in p["retained_fd"][m]}
        base = [m for m in ("esd", "salun", "negative_guidance") if m in fr]
        best = min(base, key=lambda m: fr[m])
        out[key] = {"sfd_forget_rate_le_0.05": fr["sfd"] <= 0.05,
                    "sfd_retained_acc_within_0.03_of_teacher": ra["sfd"] >= ra["teacher"] - 0.03,
                    "sfd_retained_fd_le_1.2x_teacher": fd["sfd"] <= 1.2 * fd["teacher"],
                    "sfd_forgets_as_well_as_best_baseline": fr["sfd"] <= fr[best] + 1e-9,
                    "sfd_keeps_others_better_than_baselines": all(ra["sfd"] >= ra[m] for m in base)
                    and all(fd["sfd"] <= fd[m] for m in base)}
    out["speedup_ge_10x"] = p["speedup_one_step"] >= 10
    return out


def summary(p: dict) -> dict:
    """The issue's keys, method → one value: each rate and distance averaged over the forget choices (every choice
    has the same sample size); the per-choice values with their intervals stay in unlearn-details.json."""
    def mean(per_choice: dict) -> float:
        values = [v["value"] if isinstance(v, dict) else v for v in per_choice.values()]
        return round(float(np.mean(values)), 4)

    out = {k: {m: mean(v) for m, v in p[k].items() if v} for k in ("forget_rate", "retained_accuracy", "retained_fd")}
    n = p["n_samples"]
    return {**out, "teacher_accuracy": mean(p["teacher_accuracy"]), "seconds_per_image": p["seconds_per_image"],
            "speedup_one_step": p["speedup_one_step"],
            "n_samples": n["per_choice_per_method"] * len(n["choices"])}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer samples per class (same measurement)")
    ap.add_argument("--per-class", type=int, default=None)
    ap.add_argument("--teacher-steps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    per_class = args.per_class or (20 if args.quick else 100)
    payload, details = run(per_class, args.teacher_steps, args.seed)
    assert tuple(payload) == KEYS
    verdict = claims(payload)
    rows = []
    for key in payload["n_samples"]["choices"]:
        for m in METHODS:
            if key not in payload["forget_rate"][m]:
                continue
            fr, ra = payload["forget_rate"][m][key], payload["retained_accuracy"][m][key]
            rows.append([key, m, f"{fr['value']:.3f} [{fr['ci95'][0]:.2f},{fr['ci95'][1]:.2f}]",
                         f"{ra['value']:.3f} [{ra['ci95'][0]:.2f},{ra['ci95'][1]:.2f}]", payload["retained_fd"][m][key],
                         f"{payload['seconds_per_image'][m]:.5f}"])
    print(markdown_table(["choice", "method", "forget rate [95% CI]", "retained acc [95% CI]", "retained FD",
                          "s / image"], rows))
    print(f"\nteacher accuracy (all classes): {json.dumps({k: v['value'] for k, v in payload['teacher_accuracy'].items()})}")
    print(f"speedup one step vs teacher ({args.teacher_steps} DDIM steps): {payload['speedup_one_step']:.1f}×")
    print(f"n: {per_class} per class per method and choice")
    for what, why in details["skipped"].items():
        print(f"skipped: {what} ({why})")
    print("claims / goals:", json.dumps(verdict, indent=1))
    RESULTS.mkdir(exist_ok=True)
    flat = summary(payload)
    assert tuple(flat) == KEYS
    (RESULTS / "unlearn.json").write_text(json.dumps(flat, indent=2) + "\n")
    (RESULTS / "unlearn-details.json").write_text(json.dumps({"claims": verdict, "quick": args.quick,
                                                              "per_choice": payload, **details}, indent=2) + "\n")


if __name__ == "__main__":
    main()
