"""The Aggregation capability's typed requests (dependency-free: the tab and the action catalog import them)."""

from __future__ import annotations

from dataclasses import dataclass

from backends.common.errors import InputError
from backends.common.params import param, seed_param

from .catalog import MODELS, PROBLEMS


def chosen_models(problem: str, models) -> list[str]:
    """The models that take part: a list of names or one comma-separated text (empty or None: all of them)."""
    known = MODELS[problem]
    if models is None or (isinstance(models, str) and not models.strip()):
        return list(known)
    names = [m.strip() for m in models.split(",")] if isinstance(models, str) else [str(m) for m in models]
    unknown = [m for m in names if m not in known]
    if unknown:
        raise InputError(f"{problem} has no model {', '.join(map(repr, unknown))}; its models are {', '.join(known)}.")
    if len(set(names)) < 2:
        raise InputError("Choose at least two models to aggregate.")
    return [m for m in known if m in names]


@dataclass
class AggregateRequest:
    problem: str = param("pathological", choices=PROBLEMS, label="Problem",
                         help="The paper's pathological 1-D case, scikit-learn's diabetes data, or a PDE "
                              "(Laplace, Burgers) solved here by several solvers.")
    models: list | str | None = param(None, label="Models",
                           help="Which models take part (names, or comma-separated text); empty: all of the problem's.")
    n_train: int = param(10, minimum=4, maximum=140, label="Training-set size", cli=("--n",),
                         help="How much the aggregators learn from: points (pathological), rows (diabetes), "
                              "solved forcings (Laplace) or initial conditions (Burgers); capped by the problem.")
    regularization: float = param(0.1, minimum=0.0, maximum=10.0, step=0.01, label="Regularisation λ (paper: 0.1)",
                                  help="The ridge penalty on the weight functions' coefficients (MEVA and MEEA).")
    max_iter: int = param(500, minimum=5, maximum=2000, label="L-BFGS iterations (paper: 500)",
                          help="Iterations of L-BFGS for each of MEVA and MEEA.")
    seed: int = seed_param("Same seed → the same split, noise and fit.")

    def validate(self) -> None:
        chosen_models(self.problem, self.models)


@dataclass
class SweepRequest:
    """Test error of MEVA and MEEA as the training set grows: where minimal-error aggregation overfits."""

    problem: str = param("pathological", choices=PROBLEMS, label="Problem",
                         help="The problem whose training-set sizes are swept.")
    models: list | str | None = param(None, label="Models",
                           help="Which models take part (names, or comma-separated text); empty: all of the problem's.")
    largest: int = param(80, minimum=8, maximum=140, label="Largest training set",
                         help="The sweep doubles the training set from 4 up to this size.")
    seeds: int = param(3, minimum=1, maximum=20, label="Seeds per size",
                       help="Splits per size; the curve is their median.")
    seed: int = seed_param("The first seed of the splits.")

    def validate(self) -> None:
        chosen_models(self.problem, self.models)
