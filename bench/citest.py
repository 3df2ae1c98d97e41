"""DCT vs Fisher-z vs chi-square on discretized data: type-I error, power, and PC's SHD / edge F1, one run.

CI statements (every variable observed only discretized, random thresholds in [−1, 1] of its standardised
latent value, edge weights |w| ∈ [0.5, 1.5] with random signs, a fresh SEM per data set):
  - |S| = 0: collider X1→X3←X2: X1 ⊥ X2 (true) and X1 ⊥ X3 (false);
  - |S| = 1: chain X1→X2→X3: X1 ⊥ X3 | X2 (true) and X1 ⊥ X2 | X3 (false);
  - |S| = 2: diamond X1→{X2, X3}→X4: X1 ⊥ X4 | X2, X3 (true) and X2 ⊥ X4 | X1, X3 (false);
for n ∈ {500, 2000} and 2 or 5 levels. Type-I error: the share of true statements rejected at α = 0.05; power:
the share of false ones rejected. PC (causal-learn, stable, with each test) on random DAGs of 8 variables
(1.5 expected neighbours), n = 2000, every variable binarised (and a second setting with 5 levels);
SHD against the true CPDAG and edge (skeleton) F1.

``bench/results/citest.json`` holds exactly the issue's keys: ``type1_error``, ``power``, ``pc_shd``, ``pc_f1``
(test → value: the mean over every CI setting, or over the binarised PC setting's DAGs) and ``n_datasets``
(simulated data sets per CI setting; the DAGs per PC setting are in the details); ``citest-details.json`` has every setting with 95% Wilson
intervals (CI tests) or standard errors (PC).

No measurement here is a user action: the tests are called directly (the same code the actions call).

    python -m bench.citest [--quick]        # quick: 40 data sets per setting, 10 DAGs
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from backends.citest.citests import TESTS, pvalues
from backends.citest.discovery import run_pc, true_cpdag
from backends.citest.graphs import Graph, discretize, make_graph, names_for, sample_latent
from bench.report import RESULTS, markdown_table

ALPHA = 0.05
NS = (500, 2000)
LEVELS = (2, 5)


def _graph(edges: list[tuple[int, int]], p: int) -> Graph:
    adj = np.zeros((p, p), dtype=bool)
    for a, b in edges:
        adj[a, b] = True
    return Graph(names_for(p), adj)


# |S| → (graph, true statement, false statement); statements as (x, y, S)
DESIGNS = {
    0: (_graph([(0, 2), (1, 2)], 3), (0, 1, []), (0, 2, [])),
    1: (_graph([(0, 1), (1, 2)], 3), (0, 2, [1]), (0, 1, [2])),
    2: (_graph([(0, 1), (0, 2), (1, 3), (2, 3)], 4), (0, 3, [1, 2]), (1, 3, [0, 2])),
}


def wilson(k: int, n: int) -> list[float]:
    if n == 0:
        return [float("nan"), float("nan")]
    z, p = 1.96, k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [float(centre - half), float(centre + half)]


def ci_setting(n: int, levels: int, size: int, count: int, seed: int) -> dict:
    graph, true_st, false_st = DESIGNS[size]
    p = len(graph.names)
    reject = {kind: {t: 0 for t in TESTS} for kind in ("true", "false")}
    done = 0
    for k in range(count):
        rng = np.random.default_rng([seed, n, levels, size, k])
        X = discretize(sample_latent(graph, n, rng), list(range(p)), levels, rng)
        if any(np.unique(X[:, j]).size < 2 for j in range(p)):
            continue  # a variable all in one level: no test can run (counted as not done)
        for kind, (x, y, s) in (("true", true_st), ("false", false_st)):
            for t, pv in pvalues(X, x, y, s, discrete=np.ones(p, dtype=bool)).items():
                reject[kind][t] += pv < ALPHA
        done += 1
    out = {"n": n, "levels": levels, "conditioning_size": size, "datasets": done}
    for kind, key in (("true", "type1_error"), ("false", "power")):
        out[key] = {t: reject[kind][t] / done for t in TESTS}
        out[key + "_ci95"] = {t: wilson(reject[kind][t], done) for t in TESTS}
    return out


def pc_setting(levels: int, count: int, seed: int, nodes: int = 8, n: int = 2000) -> dict:
    shd = {t: [] for t in TESTS}
    f1 = {t: [] for t in TESTS}
    seconds = {t: 0.0 for t in TESTS}
    for k in range(count):
        rng = np.random.default_rng([seed, 7, levels, k])
        graph = make_graph("random", nodes, density=1.5, seed=int(rng.integers(2**31)))
        X = discretize(sample_latent(graph, n, rng), list(range(nodes)), levels, rng)
        if any(np.unique(X[:, j]).size < 2 for j in range(nodes)):
            continue
        truth = true_cpdag(graph)
        for t in TESTS:
            t0 = time.perf_counter()
            kwargs = {"discrete": np.ones(nodes, dtype=bool)} if t == "dct" else {}
            rec, _ = run_pc(X, t, ALPHA, graph.names, truth, **kwargs)
            seconds[t] += time.perf_counter() - t0
            shd[t].append(rec.shd)
            f1[t].append(rec.f1)
    m = len(shd[TESTS[0]])
    return {"levels": levels, "nodes": nodes, "n": n, "dags": m,
            "shd": {t: float(np.mean(v)) for t, v in shd.items()},
            "shd_se": {t: float(np.std(v, ddof=1) / np.sqrt(m)) if m > 1 else None for t, v in shd.items()},
            "f1": {t: float(np.mean(v)) for t, v in f1.items()},
            "f1_se": {t: float(np.std(v, ddof=1) / np.sqrt(m)) if m > 1 else None for t, v in f1.items()},
            "dct_shd_below_fisherz": int(sum(a < b for a, b in zip(shd["dct"], shd["fisherz"], strict=True))),
            "seconds_per_dag": {t: seconds[t] / max(1, m) for t in TESTS}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="40 data sets per CI setting, 10 DAGs per PC setting")
    p.add_argument("--datasets", type=int, default=None, help="data sets per CI setting (default 200; quick 40)")
    p.add_argument("--dags", type=int, default=None, help="random DAGs per PC setting (default 50; quick 10)")
    p.add_argument("--seed", type=int, default=2025)
    args = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    count = args.datasets or (40 if args.quick else 200)
    dags = args.dags or (10 if args.quick else 50)
    t0 = time.perf_counter()

    settings = []
    for n in NS:
        for levels in LEVELS:
            for size in DESIGNS:
                s = ci_setting(n, levels, size, count, args.seed)
                settings.append(s)
                print(f"n={n} levels={levels} |S|={size}: type-I {s['type1_error']} power {s['power']}", flush=True)
    pcs = [pc_setting(levels, dags, args.seed) for levels in LEVELS]

    rows = [[s["n"], s["levels"], s["conditioning_size"], s["datasets"],
             *[s["type1_error"][t] for t in TESTS], *[s["power"][t] for t in TESTS]] for s in settings]
    print(markdown_table(["n", "levels", "|S|", "data sets", *[f"type-I {t}" for t in TESTS],
                          *[f"power {t}" for t in TESTS]], rows))
    print(markdown_table(["PC: levels", "DAGs", *[f"SHD {t}" for t in TESTS], *[f"F1 {t}" for t in TESTS],
                          "DCT SHD < Fisher-z"],
                         [[c["levels"], c["dags"], *[c["shd"][t] for t in TESTS], *[c["f1"][t] for t in TESTS],
                           f"{c['dct_shd_below_fisherz']}/{c['dags']}"] for c in pcs]))

    binary_pc = pcs[0]
    payload = {
        "type1_error": {t: float(np.mean([s["type1_error"][t] for s in settings])) for t in TESTS},
        "power": {t: float(np.mean([s["power"][t] for s in settings])) for t in TESTS},
        "pc_shd": binary_pc["shd"],
        "pc_f1": binary_pc["f1"],
        "n_datasets": min(s["datasets"] for s in settings),
    }
    details = {"alpha": ALPHA, "quick": args.quick, "n_datasets": {
        "per_ci_setting": payload["n_datasets"], "ci_settings": len(settings), "dags_per_pc_setting": binary_pc["dags"]},
               "ci_settings": settings, "pc_settings": pcs,
               "bench_minutes": (time.perf_counter() - t0) / 60,
               "command": "python -m bench.citest" + (" --quick" if args.quick else "")}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "citest.json").write_text(json.dumps(payload, indent=2) + "\n")
    (RESULTS / "citest-details.json").write_text(json.dumps(details, indent=2) + "\n")
    print(json.dumps(payload))
    print(f"wrote {Path(RESULTS / 'citest.json')} and citest-details.json in {details['bench_minutes']:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
