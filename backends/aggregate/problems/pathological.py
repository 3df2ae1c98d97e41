"""The paper's pathological case (its notebook's example 3): the target 3·cos(2πx) on [−1, 1], a *good* model that
is the target plus N(0, 0.5²) noise, and two *bad* constant models −3 and +3. The training points lie only in
[−1, −½] ∪ [½, 1], where the target is close to +3, so a weight function fitted to the target there can prefer the
bad constant +3 and carry that choice into the middle, where it is wrong by up to 6."""

from __future__ import annotations

import numpy as np

from backends.aggregate.catalog import MODELS as CATALOG

from . import Split

MODELS = CATALOG["pathological"]
NOISE = 0.5
N_TEST = 200


def target(x: np.ndarray) -> np.ndarray:
    return 3.0 * np.cos(2 * np.pi * x)


def outputs(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    good = target(x) + rng.normal(0.0, NOISE, size=x.shape)
    return np.column_stack([good, -3.0 * np.ones_like(x), 3.0 * np.ones_like(x)])


def make_split(n_train: int, seed: int) -> Split:
    rng = np.random.default_rng(seed)
    half = n_train // 2
    x_train = np.concatenate([rng.random(half) / 2 - 1, rng.random(n_train - half) / 2 + 0.5])
    x_test = np.linspace(-1, 1, N_TEST)
    return Split(
        problem="pathological", model_names=list(MODELS), feature_names=["x"],
        x_train=x_train[:, None], m_train=outputs(x_train, rng), y_train=target(x_train),
        x_test=x_test[:, None], m_test=outputs(x_test, rng), y_test=target(x_test),
        kind="line", train_unit="points",
        # the notebook's kernel: a Gaussian of length 1 on x alone, λ = 0.1
        aggregator={"kernel": "rbf", "length_scale": 1.0, "output_length_scale": None},
        map_rows=np.arange(N_TEST), map_shape=(N_TEST,),
        notes="training points only in [−1, −½] ∪ [½, 1]; test on a grid over [−1, 1]")
