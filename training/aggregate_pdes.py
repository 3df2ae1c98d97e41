"""Solve the Aggregation tab's PDE pools once and ship them (``assets/aggregate-pdes/``): every model's solution
and the reference on the target grid for 120 Laplace forcings and 120 Burgers initial conditions (seed 0), so the
tab, the tests and the bench start in a second instead of a minute. Reproducible: the problems' own solvers.

    python -m training.aggregate_pdes            # writes assets/aggregate-pdes/{laplace,burgers}.npz, metrics.json
"""

from __future__ import annotations

import json
import sys

import numpy as np

from backends.aggregate.problems import ASSET_FOLDER, burgers, laplace
from backends.common.settings import default_assets_dir


def main(argv=None) -> int:
    out = default_assets_dir() / ASSET_FOLDER
    out.mkdir(parents=True, exist_ok=True)
    params, exact, forcing, outputs = laplace.solve_pool()
    np.savez_compressed(out / "laplace.npz", params=params, exact=exact.astype(np.float32),
                        forcing=forcing.astype(np.float32), outputs=outputs.astype(np.float32))
    u0, bexact, boutputs = burgers.solve_pool()
    np.savez_compressed(out / "burgers.npz", u0=u0.astype(np.float32), exact=bexact.astype(np.float32),
                        outputs=boutputs.astype(np.float32))
    metrics = {}
    for name, models, ex, out_ in (("laplace", laplace.MODELS, exact, outputs),
                                   ("burgers", burgers.MODELS, bexact, boutputs)):
        mse = ((out_ - ex[:, :, None]) ** 2).mean(1)  # per instance, per model
        metrics[name] = {"instances": int(len(ex)), "grid_points": int(ex.shape[1]),
                         "model_mse_median": dict(zip(models, np.median(mse, 0).round(8).tolist(), strict=True)),
                         "model_mse_mean": dict(zip(models, mse.mean(0).round(8).tolist(), strict=True))}
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
    print(json.dumps(metrics, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
