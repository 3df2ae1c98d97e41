"""Aggregation tab (MEVA): choose a problem and its models, aggregate them by minimal variance (MEVA), minimal
error (MEEA) and the usual ensembles, and see each model's errors, the learned weight maps α(x) and every method's
test error; sweep the training-set size to see where minimal-error aggregation overfits."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from app.components.action_button import bind_action
from app.components.errors import user_errors
from app.components.failures import listen
from app.components.params import control, documented
from app.tabs import TabSpec
from backends.aggregate.actions import AGGREGATE, SWEEP
from backends.aggregate.catalog import MODELS
from backends.aggregate.requests import AggregateRequest, SweepRequest

INTRO = ("**MEVA** (ICLR 2025, Bourdais & Owhadi): combine black-box models point-wise, "
         "M_A(x) = Σᵢ αᵢ(x) Mᵢ(x) with Σᵢ αᵢ(x) = 1, by *estimating each model's error* ê_i(x) and weighting it by "
         "1/ê_i (minimal variance) instead of regressing the target on the models' outputs (minimal error, MEEA), "
         "which overfits. Both are scikit-learn estimators here (`MEVARegressor`, `MEEARegressor`), beside "
         "stacking, the plain average, inverse-variance weighting and the best single model. All on CPU "
         "(numpy / SciPy L-BFGS); the PDE solutions were solved here by the listed solvers.")


def _controls(ui: SimpleNamespace) -> None:
    ui.problem = control(AggregateRequest, "problem", elem_id="agg-problem")
    first = AggregateRequest().problem
    # a multiselect that accepts any name (the backend says which names the problem has): an API call may name the
    # models of another problem than the one the page shows
    ui.models = gr.Dropdown(list(MODELS[first]), value=list(MODELS[first]), multiselect=True, allow_custom_value=True,
                            label="Models that take part", info="At least two; each model's errors are shown below.",
                            elem_id="agg-models")
    ui.n_train = control(AggregateRequest, "n_train", elem_id="agg-n")
    ui.regularization = control(AggregateRequest, "regularization")
    ui.max_iter = control(AggregateRequest, "max_iter", elem_id="agg-iter")
    ui.seed = control(AggregateRequest, "seed", widget="number")
    with gr.Row():
        ui.run = gr.Button("Aggregate", variant="primary", elem_id="agg-run")
        ui.stop = gr.Button("Stop", variant="stop", elem_id="agg-stop")
    with gr.Accordion("Training-set sweep", open=False):
        ui.largest = control(SweepRequest, "largest")
        ui.seeds = control(SweepRequest, "seeds")
        with gr.Row():
            ui.sweep = gr.Button("Sweep sizes", elem_id="agg-sweep")
            ui.sweep_stop = gr.Button("Stop sweep", variant="stop", elem_id="agg-sweep-stop")


def build(demo: gr.Blocks) -> None:
    ui = SimpleNamespace()
    gr.Markdown(INTRO)
    with gr.Row():
        with gr.Column(scale=1):
            _controls(ui)
        with gr.Column(scale=2):
            ui.status = gr.Markdown(elem_id="agg-status")
            ui.mse = gr.Image(label="Test error of every method (bars) and training error (ticks)", type="filepath",
                              interactive=False, elem_id="agg-mse")
            ui.weights = gr.Image(label="Learned weights α(x): MEVA and MEEA", type="filepath", interactive=False,
                                  elem_id="agg-weights")
    ui.errors = gr.Image(label="Each model's errors", type="filepath", interactive=False, elem_id="agg-errors")
    ui.sweep_status = gr.Markdown(elem_id="agg-sweep-status")
    ui.sweep_plot = gr.Image(label="Test error vs training-set size", type="filepath", interactive=False,
                             elem_id="agg-sweep-plot")
    with gr.Row():
        ui.summary = gr.JSON(label="Run (JSON)", elem_id="agg-json")
        ui.files = gr.File(label="Downloads (predictions.npz, weights.npz, plots, run card)", file_count="multiple",
                           elem_id="agg-files")
    _wire(ui)


@user_errors
@documented(AggregateRequest)
def on_problem(problem):
    """The models of the chosen problem (all of them ticked)."""
    if problem not in MODELS:
        raise gr.Error(f"Unknown problem {problem!r}; choose one of {', '.join(MODELS)}.")
    return gr.update(choices=list(MODELS[problem]), value=list(MODELS[problem]))


def to_request(problem, models, n_train, regularization, max_iter, seed):
    return AggregateRequest(problem=problem, models=list(models or []) or None, n_train=n_train,
                            regularization=regularization, max_iter=max_iter, seed=0 if seed is None else seed)


def to_sweep(problem, models, largest, seeds, seed):
    return SweepRequest(problem=problem, models=list(models or []) or None, largest=largest, seeds=seeds,
                        seed=0 if seed is None else seed)


def status_text(result) -> str:
    mse = result.test_mse
    verdict = ("MEVA below MEEA" if mse["meva"] < mse["meea"] else "MEEA below MEVA") + " · " + (
        "MEVA below the best single model" if mse["meva"] < mse["best_single"]
        else f"the best single model ({result.best_model}) below MEVA")
    return (f"**{result.problem}**, {result.n_train} {result.train_unit} ({result.n_train_rows} training points), "
            f"{len(result.y_test)} test points · test MSE: MEVA {mse['meva']:.4g}, MEEA {mse['meea']:.4g}, "
            f"stacking {mse['stacking']:.4g}, average {mse['average']:.4g}, best single {mse['best_single']:.4g} · "
            f"{verdict} · computed on CPU")


def show_result(request, result, paths):
    return (status_text(result), str(paths["mse_plot"]), str(paths["weights_plot"]), str(paths["errors_plot"]),
            result.to_json(), [str(p) for p in paths.values()])


def show_sweep(request, result, paths):
    meva, meea = result.test_mse["meva"], result.test_mse["meea"]
    text = (f"Sweep of {request.problem}: sizes {result.sizes} ({result.train_unit}), median of {request.seeds} "
            f"seed(s). MEVA below MEEA at {sum(a < b for a, b in zip(meva, meea, strict=True))} of "
            f"{len(result.sizes)} sizes.")
    return text, str(paths["sweep_plot"]), result.to_json(), [str(p) for p in paths.values()]


def _wire(ui: SimpleNamespace) -> None:
    listen(ui.problem.change, on_problem, status=ui.status, inputs=[ui.problem], outputs=[ui.models],
           api_name="aggregate_models", concurrency_id="aggregate-light", concurrency_limit=4)
    bind_action(AGGREGATE, trigger=ui.run.click, stop=ui.stop, status=ui.status,
                inputs=[ui.problem, ui.models, ui.n_train, ui.regularization, ui.max_iter, ui.seed],
                outputs=[ui.status, ui.mse, ui.weights, ui.errors, ui.summary, ui.files], to_request=to_request,
                show=show_result, running="Fitting MEVA, MEEA and the baselines…",
                stopped="Stopped by the user: the plots and downloads below (if any) are the previous run's.")
    bind_action(SWEEP, trigger=ui.sweep.click, stop=ui.sweep_stop, stop_api_name="aggregate_sweep_stop",
                status=ui.sweep_status, inputs=[ui.problem, ui.models, ui.largest, ui.seeds, ui.seed],
                outputs=[ui.sweep_status, ui.sweep_plot, ui.summary, ui.files], to_request=to_sweep,
                show=show_sweep, running="Sweeping training-set sizes…",
                stopped="Stopped by the user: the sweep plot below (if any) is the previous sweep's.")


TAB = TabSpec(name="aggregate", title="Aggregation", build=build)
