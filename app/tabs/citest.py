"""CI Test tab (DCT): pick or type a causal graph, say which variables are seen only discretized, then test one
CI statement with DCT, Fisher-z and chi-square, or discover the whole graph with PC and each test."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from app.components.action_button import bind_action, bind_stop
from app.components.errors import user_errors
from app.components.failures import listen
from app.components.params import control, documented
from app.tabs import TabSpec
from backends.citest.actions import DISCOVER, TEST
from backends.citest.requests import DataRequest, DiscoverRequest, TestRequest

INTRO = ("**DCT** (ICLR 2025): when a latent continuous variable is only observed binned (income brackets, Likert "
         "scales), Fisher-z and chi-square on the observed values test the wrong thing: conditioning on a binned "
         "variable does not block the path through it. DCT estimates the latent correlations through *bridge "
         "equations*, the precision matrix by *nodewise regression*, and tests with the derived asymptotic normal "
         "law. Simulate a graph (or upload a CSV), then **Test** one statement or **Discover** the graph with PC "
         "(causal-learn). Everything runs on the CPU (NumPy/SciPy; causal-learn's PC).")
DATA_FIELDS = ("graph", "nodes", "edges", "density", "n", "discretized", "levels", "alpha", "seed")


def _data_column(ui: SimpleNamespace) -> None:
    ui.graph = control(DataRequest, "graph", widget="radio", elem_id="ci-graph")
    with gr.Row():
        ui.nodes = control(DataRequest, "nodes", elem_id="ci-nodes")
        ui.density = control(DataRequest, "density")
    ui.edges = control(DataRequest, "edges", elem_id="ci-edges", placeholder="A->B, B->C, A->C")
    ui.n = control(DataRequest, "n", elem_id="ci-n")
    with gr.Row():
        ui.discretized = control(DataRequest, "discretized", elem_id="ci-discretized")
        ui.levels = control(DataRequest, "levels", elem_id="ci-levels")
    with gr.Row():
        ui.alpha = control(DataRequest, "alpha")
        ui.seed = control(DataRequest, "seed", widget="number")
    ui.csv = gr.File(label="…or your own CSV (header row, numbers only, ≤ 12 columns): replaces the graph",
                     file_types=[".csv"], type="filepath", elem_id="ci-csv")
    ui.dag = gr.Image(label="The true DAG (simulated data)", type="pil", height=260, interactive=False,
                      elem_id="ci-dag")


def _test_panel(ui: SimpleNamespace) -> None:
    gr.Markdown("**Test one statement** X ⊥ Y | S (names of the graph's variables or the CSV's columns).")
    with gr.Row():
        ui.x = control(TestRequest, "x", elem_id="ci-x")
        ui.y = control(TestRequest, "y", elem_id="ci-y")
        ui.given = control(TestRequest, "given", elem_id="ci-given")
    ui.test_btn = gr.Button("Test", variant="primary", elem_id="ci-test")
    ui.pplot = gr.Image(label="p-values (log scale) against α", type="filepath", height=240, interactive=False,
                        elem_id="ci-pplot")
    ui.test_json = gr.JSON(label="Test (JSON)", elem_id="ci-test-json")


def _discover_panel(ui: SimpleNamespace) -> None:
    gr.Markdown("**Discover the graph** with PC (causal-learn), once per test, on the same data.")
    ui.depth = control(DiscoverRequest, "max_depth", elem_id="ci-depth")
    ui.discover_btn = gr.Button("Discover", variant="primary", elem_id="ci-discover")
    ui.graphs = gr.Image(label="True CPDAG vs PC's graph per test (red: extra edge, dashed: missed)",
                         type="filepath", height=360, interactive=False, elem_id="ci-graphs")
    ui.scores = gr.Dataframe(headers=["test", "SHD", "edge F1", "precision", "recall", "CI tests", "seconds"],
                             label="Scores against the true CPDAG", interactive=False, elem_id="ci-scores")


def build(demo: gr.Blocks) -> None:
    ui = SimpleNamespace()
    gr.Markdown(INTRO)
    with gr.Row():
        with gr.Column(scale=2):
            _data_column(ui)
        with gr.Column(scale=3):
            with gr.Tabs():
                with gr.Tab("Test"):
                    _test_panel(ui)
                with gr.Tab("Discover"):
                    _discover_panel(ui)
            ui.stop = gr.Button("Stop", variant="stop", elem_id="ci-stop")
            ui.status = gr.Markdown(elem_id="ci-status")
            ui.files = gr.File(label="Downloads (p-values CSV, graphs JSON/GraphML, data.csv, run card)",
                               file_count="multiple", elem_id="ci-files")
    _wire(ui, demo)


def _data_request(cls, graph, nodes, edges, density, n, discretized, levels, alpha, seed, csv, **rest):
    return cls(graph=graph, nodes=nodes, edges=edges or "", density=density, n=n, discretized=discretized or "",
               levels=levels, alpha=alpha, seed=0 if seed is None else seed, csv=Path(csv) if csv else None, **rest)


def to_test_request(graph, nodes, edges, density, n, discretized, levels, alpha, seed, x, y, given, csv=None):
    """Args:
        csv: A CSV file of your own (header row, numbers only); empty (the default): simulate the graph.
    """
    return _data_request(TestRequest, graph, nodes, edges, density, n, discretized, levels, alpha, seed, csv,
                         x=x or "", y=y or "", given=given or "")


def to_discover_request(graph, nodes, edges, density, n, discretized, levels, alpha, seed, max_depth, csv=None):
    """Args:
        csv: A CSV file of your own (header row, numbers only); empty (the default): simulate the graph.
    """
    return _data_request(DiscoverRequest, graph, nodes, edges, density, n, discretized, levels, alpha, seed, csv,
                         max_depth=-1 if max_depth is None else max_depth)


def show_test(request, result, paths):
    from backends.citest.citests import LABELS

    correct = result.correct()
    words = []
    for t, p in result.p_values.items():
        verdict = "rejects" if p < result.alpha else "keeps"
        mark = "" if correct is None else (" ✓" if correct[t] else " ✗")
        words.append(f"{LABELS[t]} p = {p:.3g} ({verdict}){mark}")
    truth = f" · truth: **{result.truth}**" if result.truth else " · no true graph (CSV)"
    status = (f"**{result.statement}**{truth} · " + " · ".join(words)
              + f" · n = {result.n} · computed on CPU (NumPy/SciPy, causal-learn)")
    return status, str(paths["picture"]), result.to_json(), [str(p) for p in paths.values()]


def show_discover(request, result, paths):
    from backends.citest.citests import LABELS

    scores = result.scores()
    rows = [[LABELS[t], s["shd"], None if s["f1"] is None else round(s["f1"], 3),
             None if s["precision"] is None else round(s["precision"], 3),
             None if s["recall"] is None else round(s["recall"], 3), s["tests_run"], round(result.seconds[t], 2)]
            for t, s in scores.items()]
    if result.truth is not None:
        summary = " · ".join(f"{LABELS[t]}: SHD {s['shd']}, F1 {s['f1']:.2f}" for t, s in scores.items())
    else:
        summary = "no true graph (CSV): the recovered graphs are shown without scores"
    status = f"PC done on {len(result.names)} variables, n = {result.n} · {summary} · computed on CPU (causal-learn PC)"
    return status, str(paths["picture"]), rows, [str(p) for p in paths.values()]


@user_errors
@documented(DataRequest)
def on_graph(graph, nodes, edges, density, seed):
    """The true DAG the data would be simulated from, drawn (nothing is computed)."""
    from backends.citest.graphs import make_graph
    from backends.citest.outputs import dag_png

    if graph == "custom" and not (edges or "").strip():
        return gr.skip()
    from PIL import Image

    g = make_graph(graph, int(nodes), edges or "", float(density), 0 if seed is None else int(seed))
    return Image.open(io.BytesIO(dag_png(g)))


def _wire(ui: SimpleNamespace, demo: gr.Blocks) -> None:
    data = [ui.graph, ui.nodes, ui.edges, ui.density, ui.n, ui.discretized, ui.levels, ui.alpha, ui.seed]
    shape = [ui.graph, ui.nodes, ui.edges, ui.density, ui.seed]
    light = {"concurrency_id": "citest-light", "concurrency_limit": 4}
    listen([c.change for c in shape], on_graph, status=ui.status, inputs=shape, outputs=[ui.dag],
           api_name="citest_graph", **light)
    demo.load(on_graph, inputs=shape, outputs=[ui.dag], api_visibility="private")
    bind_action(TEST, trigger=ui.test_btn.click, status=ui.status, inputs=[*data, ui.x, ui.y, ui.given, ui.csv],
                outputs=[ui.status, ui.pplot, ui.test_json, ui.files], to_request=to_test_request, show=show_test,
                running="Testing…")
    bind_action(DISCOVER, trigger=ui.discover_btn.click, status=ui.status, inputs=[*data, ui.depth, ui.csv],
                outputs=[ui.status, ui.graphs, ui.scores, ui.files], to_request=to_discover_request,
                show=show_discover, running="Running PC with each test…")
    bind_stop(ui.stop, [TEST, DISCOVER], ui.status)


TAB = TabSpec(name="citest", title="CI Test", build=build)
