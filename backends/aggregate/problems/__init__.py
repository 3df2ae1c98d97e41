"""The aggregation problems: each gives, for a training-set size and a seed, the models' outputs and the target on
a training split and a test split (:class:`Split`), and the aggregator settings the paper used for its kind.

``pathological`` (the paper's 1-D example 3), ``diabetes`` (scikit-learn's tabular set, six learners as in the
paper's Boston notebook), ``laplace`` and ``burgers`` (PDEs solved here by solvers of different strengths)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import numpy as np

from backends.aggregate.catalog import MODELS as _MODELS
from backends.aggregate.catalog import PROBLEMS


@dataclass
class Split:
    """The models' outputs and the target on a training and a test split, and how to draw the test points."""

    problem: str
    model_names: list[str]
    feature_names: list[str]
    x_train: np.ndarray  # n × d (the inputs the weight functions see)
    m_train: np.ndarray  # n × m (each model's output)
    y_train: np.ndarray
    x_test: np.ndarray
    m_test: np.ndarray
    y_test: np.ndarray
    kind: str  # "line" (1-D input), "tabular", "field2d" (a grid per instance), "field1d"
    train_unit: str  # what n_train counts ("points", "rows", "forcings", "initial conditions")
    aggregator: dict = field(default_factory=dict)  # MEVA/MEEA settings for this problem (the paper's kind)
    map_rows: np.ndarray | None = None  # rows of the test split that form the map shown (one instance's grid)
    map_shape: tuple[int, ...] | None = None
    notes: str = ""


def problem_module(name: str):
    if name not in PROBLEMS:
        raise KeyError(name)
    return importlib.import_module(f"{__name__}.{name}")


def make_split(name: str, n_train: int, seed: int) -> Split:
    return problem_module(name).make_split(n_train, seed)


def model_names(name: str) -> tuple[str, ...]:
    return _MODELS[name]


ASSET_FOLDER = "aggregate-pdes"


def shipped_pool(name: str) -> dict[str, np.ndarray] | None:
    """The PDE problem's solved pool as ``training/aggregate_pdes.py`` shipped it (None when it is absent: the
    problem then solves its pool here, which takes a minute on a laptop)."""
    from backends.common.settings import get_settings

    path = get_settings().assets_dir / ASSET_FOLDER / f"{name}.npz"
    if not path.is_file():
        return None
    with np.load(path) as f:
        return {k: f[k].astype(np.float64) for k in f.files}
