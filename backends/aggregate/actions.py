"""The Aggregation capability's actions (``backends.common.action``): what the tab's buttons, the API, the CLI,
the bench and a replayed run card run. Light to import (numpy and scikit-learn load on first use)."""

from __future__ import annotations

from backends.common.action import Action

from .requests import AggregateRequest, SweepRequest


def _aggregate(request: AggregateRequest, model, cancel):
    from .service import aggregate

    return aggregate(request, cancel)


def _write(result, folder):
    from .outputs import write_files

    return write_files(result, folder)


def _sweep(request: SweepRequest, model, cancel):
    from .service import sweep

    return sweep(request, cancel)


def _write_sweep(result, folder):
    from .outputs import write_sweep

    return write_sweep(result, folder)


AGGREGATE = Action(
    name="aggregate_run", capability="aggregate", request_type=AggregateRequest, work=_aggregate, write=_write,
    summary=lambda result: result.to_json(),
    description="MEVA, MEEA, stacking, the average, inverse-variance weighting and the best single model fitted on "
                "one training set of a problem; test errors, weight maps and model errors.")

SWEEP = Action(
    name="aggregate_sweep", capability="aggregate", request_type=SweepRequest, work=_sweep, write=_write_sweep,
    summary=lambda result: result.to_json(),
    description="Test error of MEVA and MEEA as the training set doubles: where minimal-error aggregation overfits.")

ACTIONS = (AGGREGATE, SWEEP)
