"""Exact OT (POT's network simplex, ``ot.emd``) that a Stop can end.

The network simplex is one C++ call with no callback: at n = 64² it runs ~15 s here, at 96² minutes, and a Stop
would wait for it. Above ``IN_PROCESS_BELOW`` entries the call runs in a child Python process (the histograms and
cost handed over as .npy files in a private temporary folder) that a Stop kills at once; below it, in this
process (the child's start, ~0.5 s, would cost more than the call). ``python -m backends.ot.exact FOLDER`` is
that child.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

IN_PROCESS_BELOW = 300_000  # n·m entries; the simplex takes well under a second below this here
POLL_SECONDS = 0.1


@dataclass
class ExactResult:
    plan: np.ndarray | None
    cost: float
    warning: str  # POT's (e.g. its iteration limit reached: then not exact), or ""
    seconds: float  # the simplex's own time (a child's start and the hand-over left out)


def _solve_in_process(a: np.ndarray, b: np.ndarray, C: np.ndarray, num_iter_max: int, want_plan: bool):
    import ot

    t0 = time.perf_counter()
    G, log = ot.emd(a, b, C, numItermax=num_iter_max, log=True)
    return ExactResult(G if want_plan else None, float(log["cost"]), str(log.get("warning") or ""),
                       time.perf_counter() - t0)


def emd(a, b, C, *, cancel=None, num_iter_max: int = 10**8, want_plan: bool = True) -> ExactResult:
    """``ot.emd`` on float64 numpy copies of (a, b, C). A cancelled ``cancel`` token ends the call within
    ``POLL_SECONDS`` (its ``Cancelled`` is raised)."""
    a, b, C = (np.ascontiguousarray(np.asarray(x, dtype=np.float64)) for x in (a, b, C))
    if cancel is not None:
        cancel.raise_if_cancelled()
    if cancel is None or C.size < IN_PROCESS_BELOW:
        return _solve_in_process(a, b, C, num_iter_max, want_plan)
    with tempfile.TemporaryDirectory(prefix="ot-emd-") as folder:
        work = Path(folder)
        for name, x in (("a", a), ("b", b), ("C", C)):
            np.save(work / f"{name}.npy", x)
        (work / "ask.json").write_text(json.dumps({"num_iter_max": num_iter_max, "want_plan": want_plan}))
        package_root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]),
               "OMP_NUM_THREADS": "1"}
        child = subprocess.Popen([sys.executable, "-m", "backends.ot.exact", folder], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            while child.poll() is None:
                cancel.raise_if_cancelled()
                time.sleep(POLL_SECONDS)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        if child.returncode != 0:
            raise RuntimeError(f"the exact solver's process failed: {child.stderr.read().decode()[-500:]}")
        answer = json.loads((work / "answer.json").read_text())
        plan = np.load(work / "plan.npy") if want_plan else None
        return ExactResult(plan, answer["cost"], answer["warning"], answer["seconds"])


def _child(folder: str) -> None:
    work = Path(folder)
    ask = json.loads((work / "ask.json").read_text())
    a, b, C = (np.load(work / f"{name}.npy") for name in ("a", "b", "C"))
    result = _solve_in_process(a, b, C, ask["num_iter_max"], ask["want_plan"])
    if result.plan is not None:
        np.save(work / "plan.npy", result.plan)
    (work / "answer.json").write_text(json.dumps({"cost": result.cost, "warning": result.warning,
                                                  "seconds": result.seconds}))


if __name__ == "__main__":
    _child(sys.argv[1])
