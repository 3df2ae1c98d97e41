"""MDOT-TNT (this suite's solver) against POT's Sinkhorn variants, exact EMD and the authors' mdot-tnt: the time to a
feasible plan within a relative cost gap of exact OT.

Problems: DOTmark-style pairs on an m×m grid (``backends.ot.problems.grid_problem``): problem k of a setting uses
class ``CLASSES[k % 7]`` for both densities, seeds (k, k + 1); both costs (squared Euclidean, L1), scaled to [0, 1].
Targets: relative gaps 1e-1, 1e-2 (the reference) and 1e-3 of the plan rounded onto U(a, b) to ``ot.emd2``'s cost.

Each method's time to a target on a problem (``backends.ot.methods`` traces; solver time, the rounding and cost of a
traced point left out):

* ``tnt``: one run with γ_f = 2^16; its own annealing; the first traced point (Newton or annealing step) within
  the target (the run ends once the smallest target is reached: nothing after it changes a number).
* ``sinkhorn``, ``sinkhorn_log``, ``sinkhorn_eps_scaling``: a sweep ε = 2^-4, 2^-5, … (largest ε first); at each ε,
  the first traced point within the target; the method's time is the smallest over the sweep (generous: an oracle
  choice of ε). A run at one ε stops once its marginal error can no longer move the gap by a tenth of the smallest
  target it has not reached, or once a chunk (twice the iterations before it) moved the gap by under 1 % (not
  ε-scaling, whose first short runs all end at a huge ε; it stops when its own marginal error stops improving).
* ``mdot_tnt`` (optional peer, `pip install .[peers]`, non-commercial licence): a sweep γ_f = 2^4, 2^5, …; its time
  is that of the first whole run whose rounded plan is within the target.
* ``emd``: one ``ot.emd`` call (it reaches every target).

Each run has ``--budget`` seconds per problem: TNT's one run, each run of a sweep (a sweep may take 3 budgets in
all); a target no run reached within its budget is "did not reach" — then the method's time at that ε is more than
the budget, so budget / TNT's time is a lower bound of the speed-up (for the ε values the sweep tried). Medians count a miss as +inf (null when the median is a miss). All solvers run single-threaded
(torch and BLAS threads = 1: the machine is shared, and a contended 2-thread pool made small solves 30× slower).

Scaling (``scaling``): one smooth-GRF pair per n (sq. Euclidean), exact EMD while it ran within the scaling budget
at the n before (the network simplex cannot be stopped part-way), then MDOT-TNT (γ_f = 2^16) stopped at its first
point within the reference gap or at the budget (solver time). The cost is stored in float32 where a float64 cost
and a plan do not fit half the free memory (``problems.solver_cost_dtype``; the arithmetic stays float64).
``crossover_n_vs_emd``: the first n where TNT reached the reference target in less time than EMD took (null if none).

    python -m bench.ot --quick            # n = 16², 32²; 2 problems per (n, cost); budget 30 s per run
    python -m bench.ot                    # n = 32², 64²; 10 problems per (n, cost); budget 120 s; scaling to 128²
    python -m bench.ot --scaling-only     # the scaling alone (32², 48², 64², 96², 128²; 300 s), into the results

Each problem's record is stored as it is measured (``results/ot-records/<mode>/n<N>-<cost>-<k>.json``, the
problems of a setting interleaved with the others'), so the full run (hours on this CPU) resumes where it stopped and
can be shared by several processes (one thread each; each claims the next problem); the results are written once
every problem is measured (or with --aggregate, saying how many are missing):
    python -m bench.ot --keep-scaling &  python -m bench.ot --keep-scaling &   # two workers; the last one writes
    python -m bench.ot --fresh            # forget the stored records and start over
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from backends.ot.methods import exact_cost, mdot_available, relative_gap, run_method  # noqa: E402
from backends.ot.problems import grid_problem  # noqa: E402
from backends.ot.requests import DENSITY_CLASSES as CLASSES  # noqa: E402
from bench.report import markdown_table  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TARGETS = (1e-1, 1e-2, 1e-3)
REFERENCE = 1e-2
TNT_GAMMA = 2.0**16
SWEEP = range(4, 17)  # ε = 2^-k for Sinkhorn variants, γ_f = 2^k for mdot-tnt
SWEEP_ALLOWANCE = 3  # a sweep may take this many budgets in all; each run in it at most one budget
ALL = ("tnt", "mdot_tnt", "sinkhorn", "sinkhorn_log", "sinkhorn_eps_scaling", "emd")


class _Enough(Exception):
    """A traced run told to stop: nothing it could still do would change the bench's numbers."""


def _first_within(points, exact, targets, times):
    for p in points:
        gap = relative_gap(p.cost, exact)
        for t in targets:
            if gap <= t and (times[t] is None or p.seconds < times[t]):
                times[t] = p.seconds


def measure(method: str, problem, exact: float, budget: float) -> dict:
    """{target: seconds or None, "best_gap": smallest gap seen}: one method on one problem."""
    a, b, C = problem.a, problem.b, problem.C
    times = {t: None for t in TARGETS}
    best = math.inf
    started = time.perf_counter()
    if method == "emd":
        run = run_method("emd", a, b, C, 1.0, budget=budget)
        p = run.end()
        for t in TARGETS:
            times[t] = p.seconds
        return {**{str(t): times[t] for t in TARGETS}, "best_gap": relative_gap(p.cost, exact)}
    if method == "tnt":
        points, status = [], "finished"

        def on_tnt_point(_name, p):
            points.append(p)
            if relative_gap(p.cost, exact) <= min(TARGETS):
                raise _Enough  # every target reached: the rest of the annealing changes no number of the bench

        try:
            status = run_method("tnt", a, b, C, 1.0 / TNT_GAMMA, budget=budget, on_point=on_tnt_point).status
        except _Enough:
            status = "reached every target"
        _first_within(points, exact, TARGETS, times)
        best = min((relative_gap(p.cost, exact) for p in points), default=math.inf)
        return {**{str(t): times[t] for t in TARGETS}, "best_gap": best, "status": status}
    for k in SWEEP:
        left = min(budget, SWEEP_ALLOWANCE * budget - (time.perf_counter() - started))
        if left <= 0 or all(times[t] is not None for t in TARGETS):
            break
        open_targets = [t for t in TARGETS if times[t] is None]
        seen = []

        def on_point(_name, p, seen=seen, open_targets=open_targets):
            before = relative_gap(seen[-1].cost, exact) if seen else None
            seen.append(p)
            gap = relative_gap(p.cost, exact)
            if gap <= min(open_targets):
                raise _Enough
            if method != "sinkhorn_eps_scaling" and p.marginal_error < 0.1 * min(open_targets) * exact:
                raise _Enough  # converged: the rounding can no longer move the gap by a tenth of the target
            if method != "sinkhorn_eps_scaling" and len(seen) >= 3 and before is not None \
                    and abs(before - gap) < 0.01 * gap:  # (ε-scaling's first runs are all at a huge ε: exempt)
                raise _Enough  # a doubling of the iterations moved the gap by under 1%: this ε's bias is reached

        try:
            if method == "mdot_tnt":
                run = run_method("mdot_tnt", a, b, C, 2.0**-k, budget=left)
                seen = run.points
            else:
                run_method(method, a, b, C, 2.0**-k, budget=left, on_point=on_point)
        except _Enough:
            pass
        _first_within(seen, exact, TARGETS, times)
        best = min([best] + [relative_gap(p.cost, exact) for p in seen])
    return {**{str(t): times[t] for t in TARGETS}, "best_gap": best}


def problem_plan(sides: list[int], per: int) -> list[tuple[int, str, int]]:
    """(side, cost, k) in the order measured: problem k of every setting before problem k + 1 of any, so a run cut
    short (or shared by several workers) has every setting measured on as many problems as the others, ± 1."""
    return [(m, cost, k) for k in range(per) for m in sides for cost in ("sqeuclidean", "l1")]


def record_id(m: int, cost: str, k: int) -> str:
    return f"n{m * m}-{cost}-{k:02d}"


def claim(path: Path) -> bool:
    """True if this process may measure the problem of record ``path``: a claim file made atomically in this
    machine's temporary folder (several workers, one thread each, share the problems; a claim dies with the machine,
    so a later session's run measures what this one left)."""
    import tempfile

    claims = Path(tempfile.gettempdir()) / "bench-ot-claims" / path.parent.name
    claims.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(claims / path.name, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def median_or_none(values: list) -> float | None:
    m = statistics.median([math.inf if v is None else v for v in values]) if values else math.inf
    return None if math.isinf(m) else m


EMD_COPIES = 6  # POT's network simplex at n = 96² held ~48 bytes per (i, j) here (cost, plan, its arc arrays)


class _StopRun(Exception):
    """The scaling run's TNT reached the reference target (or its budget): nothing more to measure."""


def _scaling_row(m: int, budget: float, run_emd: bool) -> dict:
    """One n of the scaling: exact EMD (when ``run_emd``) and TNT to the reference target, one smooth pair."""
    from backends.ot.problems import default_memory_limit, dense_bytes, solver_cost_dtype
    from backends.ot.solver import solve

    n = m * m
    cost_dtype = solver_cost_dtype(n, n)  # float32 storage where a float64 cost and a plan do not fit
    problem = grid_problem(m, "grf_smooth", "grf_smooth", 0, "sqeuclidean", dtype=cost_dtype)
    row = {"n": n, "side": m, "cost_dtype": str(cost_dtype).replace("torch.", ""), "emd_seconds": None,
           "exact": None, "emd_skipped": None if run_emd else "over the budget at the n before"}
    emd_need = dense_bytes(n, n, torch.float64, copies=EMD_COPIES)
    if run_emd and emd_need > default_memory_limit():
        run_emd = False
        row["emd_skipped"] = (f"needs about {emd_need / 2**30:.1f} GiB (≈ {8 * EMD_COPIES} bytes per entry, measured), "
                              f"more than the {default_memory_limit() / 2**30:.1f} GiB allowed")
    if run_emd:
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            row["exact"] = exact_cost(problem.a, problem.b, problem.C)
            row["emd_seconds"] = time.perf_counter() - t0
        row["emd_warnings"] = sorted({str(w.message) for w in caught})  # e.g. numItermax reached: not exact
        print(f"scaling n={n}: emd {row['emd_seconds']:.2f} s", flush=True)
    exact = row["exact"]
    reached = {t: None for t in TARGETS}
    trace = []
    state = {"solver": 0.0, "wall": time.perf_counter()}

    def progress(step):
        state["solver"], state["wall"] = step.seconds, time.perf_counter()
        trace.append([step.seconds, step.marginal_error, step.cost, step.gamma])
        if exact is not None:
            gap = relative_gap(step.cost, exact)
            for t in TARGETS:
                if gap <= t and reached[t] is None:
                    reached[t] = step.seconds
            if gap <= REFERENCE:
                raise _StopRun

    class Budget:  # on solver time: the history's measuring (a plan and its rounding per step) is left out
        def raise_if_cancelled(self):
            if state["solver"] + (time.perf_counter() - state["wall"]) > budget:
                raise _StopRun

    res = None
    try:
        res = solve(problem.a, problem.b, problem.C, gamma=TNT_GAMMA, progress=progress, cancel=Budget(),
                    return_plan=False)
    except _StopRun:
        pass
    row.update({"tnt_seconds_reference": reached[REFERENCE],
                "tnt_seconds": {str(t): reached[t] for t in TARGETS},
                "tnt_best_gap": (min(relative_gap(p[2], exact) for p in trace) if exact is not None and trace
                                 else None),
                "tnt_gamma_reached": trace[-1][3] if trace else None, "tnt_points": len(trace),
                "tnt_last_cost": trace[-1][2] if trace else None,
                "tnt_stopped": ("reached the reference target" if reached[REFERENCE] is not None else
                                (res.message if res is not None else f"budget of {budget:g} s (solver time)")),
                "budget_s": budget})
    print(f"scaling n={n} ({row['cost_dtype']} cost): tnt to {REFERENCE:g}: {row['tnt_seconds_reference']}, best gap "
          f"{row['tnt_best_gap']}, γ {row['tnt_gamma_reached']}", flush=True)
    return row


def scaling(sides: list[int], budget: float, on_row=None) -> list[dict]:
    """TNT to the reference target and exact EMD, one smooth problem per n (sq. Euclidean). EMD runs while it ran
    within the budget at the n before (the network simplex cannot be stopped part-way)."""
    rows = []
    run_emd = True
    exact_cost(*(torch.full((4,), 0.25, dtype=torch.float64),) * 2, torch.rand(4, 4, dtype=torch.float64))  # load POT
    for m in sides:
        rows.append(_scaling_row(m, budget, run_emd))
        if rows[-1]["emd_seconds"] is not None and rows[-1]["emd_seconds"] > budget:
            run_emd = False
        if on_row is not None:
            on_row(rows)
    return rows


def crossover(rows: list[dict]) -> int | None:
    """The first n at which TNT reached the reference target before exact EMD finished (EMD not run: over the
    budget, which TNT's time is then under)."""
    return next((r["n"] for r in rows if r["tnt_seconds_reference"] is not None
                 and (r["emd_seconds"] is None or r["tnt_seconds_reference"] < r["emd_seconds"])), None)


def plot_scaling(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3.5), layout="constrained")
    ax = fig.subplots()
    ax.plot([r["n"] for r in rows if r["emd_seconds"] is not None],
            [r["emd_seconds"] for r in rows if r["emd_seconds"] is not None], "o-", label="exact EMD (POT)")
    ax.plot([r["n"] for r in rows if r["tnt_seconds_reference"]],
            [r["tnt_seconds_reference"] for r in rows if r["tnt_seconds_reference"]], "s-",
            label=f"MDOT-TNT to gap {REFERENCE:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (points per density)")
    ax.set_ylabel("seconds (1 CPU thread)")
    ax.legend()
    fig.savefig(path, dpi=100)


def scaling_into_results(sides: list[int], budget: float, command: str) -> None:
    """The scaling alone, written into the existing ot.json (``crossover_n_vs_emd``; its other keys untouched) and
    ot-details.json (``scaling``, with this command and when) after each n, so a long run's finished sizes count."""
    out, details_path = RESULTS / "ot.json", RESULTS / "ot-details.json"

    def write(rows):
        results = json.loads(out.read_text())
        details = json.loads(details_path.read_text())
        results["crossover_n_vs_emd"] = crossover(rows)
        details.update({"scaling": rows, "scaling_budget_s": budget, "largest_scaling_n": rows[-1]["n"],
                        "scaling_command": command, "scaling_when": time.strftime("%Y-%m-%dT%H:%M:%S"),
                        "scaling_sides_asked": sides, "scaling_threads": torch.get_num_threads()})
        out.write_text(json.dumps(results, indent=2) + "\n")
        details_path.write_text(json.dumps(details, indent=1))
        plot_scaling(rows, RESULTS / "ot-scaling.png")
        print("written:", out, "crossover n vs emd:", results["crossover_n_vs_emd"], flush=True)

    scaling(sides, budget, on_row=write)


def cpu_check(side: int, command: str) -> None:
    """The scaling's crossover n again in CPU time (the shared machine's load inflates wall times unevenly): exact EMD,
    then MDOT-TNT run to the γ at which the scaling run first reached the reference target (the annealing is
    deterministic, so it is the same path, without the history's measuring), each timed in process CPU seconds."""
    from backends.ot.solver import solve

    details_path = RESULTS / "ot-details.json"
    row = next(r for r in json.loads(details_path.read_text())["scaling"] if r["side"] == side)
    gamma = row["tnt_gamma_reached"]
    problem = grid_problem(side, "grf_smooth", "grf_smooth", 0, "sqeuclidean")
    exact_cost(*(torch.full((4,), 0.25, dtype=torch.float64),) * 2, torch.rand(4, 4, dtype=torch.float64))  # load POT
    c0, w0 = time.process_time(), time.perf_counter()
    exact = exact_cost(problem.a, problem.b, problem.C)
    emd_cpu, emd_wall = time.process_time() - c0, time.perf_counter() - w0
    print(f"cpu check n={side * side}: emd {emd_cpu:.1f} s CPU ({emd_wall:.1f} s wall)", flush=True)
    c0, w0 = time.process_time(), time.perf_counter()
    res = solve(problem.a, problem.b, problem.C, gamma=gamma, track_cost=False, return_plan=False)
    tnt_cpu, tnt_wall = time.process_time() - c0, time.perf_counter() - w0
    check = {"n": side * side, "emd_cpu_seconds": emd_cpu, "emd_wall_seconds": emd_wall, "tnt_gamma": gamma,
             "tnt_cpu_seconds": tnt_cpu, "tnt_wall_seconds": tnt_wall, "tnt_gap": relative_gap(res.cost, exact),
             "tnt_converged": res.converged, "command": command, "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    print("cpu check:", check, flush=True)
    details = json.loads(details_path.read_text())
    details["scaling_cpu_check"] = check
    details_path.write_text(json.dumps(details, indent=1))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget", type=float, default=None, help="seconds per method per problem")
    ap.add_argument("--problems", type=int, default=None, help="problems per (n, cost)")
    ap.add_argument("--sides", type=int, nargs="*", default=None, help="grid sides m (n = m²)")
    ap.add_argument("--scaling", type=int, nargs="*", default=None, help="grid sides of the scaling run")
    ap.add_argument("--scaling-budget", type=float, default=None,
                    help="seconds of solver time for TNT per n in the scaling run (default 300; quick: the budget)")
    ap.add_argument("--scaling-only", action="store_true",
                    help="run only the scaling and write it into the existing results (ot.json's crossover, "
                         "ot-details.json's scaling, the plot), after each n")
    ap.add_argument("--cpu-check", type=int, default=None, metavar="SIDE",
                    help="time exact EMD and TNT (to the scaling run's γ at that n) in CPU seconds at n = SIDE²")
    ap.add_argument("--fresh", action="store_true", help="forget the stored records of this mode and start over")
    ap.add_argument("--aggregate", action="store_true",
                    help="write the results from the stored records even if some problems are missing (said so)")
    ap.add_argument("--keep-scaling", action="store_true",
                    help="keep the scaling already in ot-details.json (from --scaling-only) instead of rerunning it")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    sides = args.sides or ([16, 32] if args.quick else [32, 64])
    per = args.problems or (2 if args.quick else 10)
    budget = args.budget or (30.0 if args.quick else 120.0)
    scale_sides = args.scaling if args.scaling is not None else ([16, 24, 32, 48] if args.quick else [32, 48, 64, 96, 128])
    scale_budget = args.scaling_budget or (budget if args.quick else 300.0)
    if args.cpu_check is not None:
        torch.set_num_threads(1)
        cpu_check(args.cpu_check, " ".join(["python -m bench.ot", *(sys.argv[1:] if argv is None else argv)]))
        return
    if args.scaling_only:
        scaling_into_results(scale_sides, scale_budget, " ".join(["python -m bench.ot", *(sys.argv[1:] if argv is None else argv)]))
        return
    methods = [m for m in ALL if m != "mdot_tnt" or mdot_available()]
    mode = "quick" if args.quick else "full"
    store = RESULTS / "ot-records" / mode  # one file per problem: a long run resumes, workers run side by side
    if args.fresh:
        for f in store.glob("*.json"):
            f.unlink()
    store.mkdir(parents=True, exist_ok=True)
    plan = problem_plan(sides, per)
    for m, cost, k in plan:
        path = store / f"{record_id(m, cost, k)}.json"
        if path.exists() or not claim(path):
            continue  # measured, or another worker has it
        cls = CLASSES[k % len(CLASSES)]
        problem = grid_problem(m, cls, cls, k, cost)
        exact = exact_cost(problem.a, problem.b, problem.C)
        rec = {"n": m * m, "cost": cost, "class": cls, "seeds": [k, k + 1], "exact": exact, "budget_s": budget,
               "methods": methods, "load_average_at_start": os.getloadavg()[0], "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
        for method in methods:
            rec[method] = measure(method, problem, exact, budget)
            print(f"n={m * m} {cost} {cls} seed {k}: {method}: "
                  f"{ {t: rec[method][str(t)] for t in TARGETS} } best gap {rec[method]['best_gap']:.2e}", flush=True)
        rec["load_average_at_end"] = os.getloadavg()[0]
        path.write_text(json.dumps(rec, indent=1))
    wanted = {record_id(m, cost, k) for m, cost, k in plan}
    records = [json.loads(f.read_text()) for f in sorted(store.glob("*.json")) if f.stem in wanted]
    missing = len(wanted) - len(records)
    if missing and not args.aggregate:
        print(f"{len(records)} of {len(wanted)} problems measured (in {store.relative_to(RESULTS.parent.parent)}); "
              f"the results are written once all are, or with --aggregate", flush=True)
        return
    methods = [m for m in ALL if all(m in r for r in records)]
    n_values = [m * m for m in sides]
    medians = {meth: {} for meth in ALL}
    for meth in ALL:
        for n in n_values:
            values = [r[meth][str(REFERENCE)] for r in records if r["n"] == n] if meth in methods else []
            medians[meth][str(n)] = median_or_none(values) if meth in methods else None
    speedup, lower = {}, {}
    for n in n_values:
        tnt_t = medians["tnt"][str(n)]
        sink = [medians[m][str(n)] for m in ("sinkhorn", "sinkhorn_log", "sinkhorn_eps_scaling")]
        reached = [s for s in sink if s is not None]
        if tnt_t is None:
            speedup[str(n)], lower[str(n)] = None, False
        elif reached:
            speedup[str(n)], lower[str(n)] = min(reached) / tnt_t, False
        else:
            speedup[str(n)], lower[str(n)] = budget / tnt_t, True
    reached_rate = {meth: ({str(t): sum(r[meth][str(t)] is not None for r in records) / len(records) for t in TARGETS}
                           if meth in methods else None) for meth in ALL}
    max_gap_tnt = max(r["tnt"]["best_gap"] for r in records)
    previous = json.loads((RESULTS / "ot-details.json").read_text()) if (RESULTS / "ot-details.json").exists() else {}
    if args.keep_scaling and previous.get("scaling"):
        rows = previous["scaling"]  # the scaling run of --scaling-only, kept with its own command and date
        scale_budget = previous.get("scaling_budget_s", scale_budget)
    else:
        rows = scaling(scale_sides, scale_budget)
        plot_scaling(rows, RESULTS / "ot-scaling.png")
    crossing = crossover(rows)
    results = {
        "problems": len(records), "n_values": n_values, "targets": list(TARGETS),
        "tnt_seconds_median": medians["tnt"], "mdot_tnt_seconds_median": medians["mdot_tnt"] if "mdot_tnt" in methods
        else None, "sinkhorn_seconds_median": medians["sinkhorn"], "sinkhorn_log_seconds_median": medians["sinkhorn_log"],
        "sinkhorn_eps_scaling_seconds_median": medians["sinkhorn_eps_scaling"], "emd_seconds_median": medians["emd"],
        "speedup_vs_best_sinkhorn": speedup, "speedup_is_lower_bound": lower, "reached_rate": reached_rate,
        "max_cost_gap_tnt": max_gap_tnt, "crossover_n_vs_emd": crossing,
    }
    name = "ot.json"  # --quick writes the same file (the details say which mode made it)
    (RESULTS / name).write_text(json.dumps(results, indent=2) + "\n")
    details = RESULTS / "ot-details.json"
    kept = {k: previous[k] for k in ("scaling_command", "scaling_when", "scaling_sides_asked", "scaling_threads",
                                     "scaling_cpu_check") if args.keep_scaling and k in previous}
    details.write_text(json.dumps({**kept, "records": records, "budget_s": budget, "scaling": rows,
                                   "problems_asked": len(wanted), "problems_missing": missing,
                                   "scaling_budget_s": scale_budget,
                                   "largest_scaling_n": rows[-1]["n"] if rows else None, "threads": 1,
                                   "machine": f"{os.cpu_count()} CPUs", "mode": "quick" if args.quick else "full",
                                   "problems_per_setting": per, "classes": list(CLASSES), "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                   "command": "python -m bench.ot" + (" --quick" if args.quick else ""),
                                   "load_average": [min(r["load_average_at_start"] for r in records),
                                                    max(r["load_average_at_end"] for r in records)]}, indent=1))
    headers = ["n", *ALL, "speedup vs best Sinkhorn"]
    table = [[n, *[("—" if medians[m][str(n)] is None else medians[m][str(n)]) for m in ALL],
              (f"≥ {speedup[str(n)]:.3g}" if lower[str(n)] else speedup[str(n)]) if speedup[str(n)] else "—"]
             for n in n_values]
    print(f"\nmedian seconds to relative gap {REFERENCE:g} ({len(records)} problems, budget {budget:g} s per method)")
    print(markdown_table(headers, table))
    print("\nreached rate:", json.dumps(reached_rate))
    print("max cost gap tnt:", max_gap_tnt, " crossover n vs emd:", crossing, " scaling:", rows)
    print("written:", RESULTS / name)


if __name__ == "__main__":
    main()
