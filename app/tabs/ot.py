"""Optimal Transport tab (MDOT-TNT): colour transfer between photos, images as densities with their displacement
interpolation, and the truncated Newton solver raced against Sinkhorn and exact EMD. torch and POT load on first
use (in the backend's service), never when the app is built."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from app.components.action_button import bind_action, bind_stop
from app.components.imageeditor import editor_picture
from app.components.params import control
from app.tabs import TabSpec
from backends.common.errors import InputError
from backends.ot.actions import CLOUDS, COLOUR, CONVERGENCE, DENSITIES
from backends.ot.requests import ColourTransferRequest, ConvergenceRequest, DensityRequest, PointCloudRequest

EXAMPLES = Path(__file__).parents[1] / "static" / "examples" / "ot"
INTRO = (
    "**MDOT-TNT** (*A Truncated Newton Method for Optimal Transport*, ICLR 2025): entropic OT solved in the dual by "
    "truncated Newton steps (preconditioned conjugate gradients) while ε = 1/γ is annealed from 1/16 down to yours; "
    "the plan is rounded onto the transport polytope, so it is exactly feasible. This suite implements the method "
    "itself in torch (the authors' `mdot-tnt` is non-commercial and only measured in the bench). Costs are scaled to "
    "[0, 1]; ε is relative to that. The device and precision in use are in each result's line.")
PICK = ("**Which solver for your size?** On this CPU up to a few thousand points, POT's exact `ot.emd` is usually "
        "the fastest way to an *exact* plan; plain Sinkhorn wins at weak precision (ε ≥ 1/256); at strong precision "
        "(small ε) Sinkhorn's kernel underflows and log-domain Sinkhorn crawls, which is where MDOT-TNT's annealing "
        "and Newton steps pay off; entropic OT pays off most on a GPU, at large n, in batches, or where a smooth "
        "plan is wanted. Section 4 measures it on your settings; `python -m bench.ot` on many problems.")


def _colour_section(ui: SimpleNamespace) -> None:
    gr.Markdown("### 1 · Colour transfer\nEach photo's colours are compressed by k-means to weighted palettes; the "
                "plan between the palettes moves every colour of the first photo to its barycentre among the "
                "second's.")
    with gr.Row():
        ui.source = gr.Image(label="Photo to re-colour", type="filepath", sources=["upload", "clipboard"], height=240,
                             elem_id="ot-source")
        ui.reference = gr.Image(label="Photo whose colours it takes", type="filepath", sources=["upload", "clipboard"],
                                height=240, elem_id="ot-reference")
    pairs = [("coffee", "chelsea"), ("astronaut", "coffee"), ("chelsea", "astronaut")]
    gr.Examples([[str(EXAMPLES / f"{a}.jpg"), str(EXAMPLES / f"{b}.jpg")] for a, b in pairs],
                inputs=[ui.source, ui.reference], label="Example photos (scikit-image's, CC0 / public domain)")
    with gr.Row():
        ui.colours = control(ColourTransferRequest, "colours", elem_id="ot-colours")
        ui.c_eps = control(ColourTransferRequest, "epsilon", widget="number", elem_id="ot-colour-eps")
        ui.max_side = control(ColourTransferRequest, "max_side", elem_id="ot-max-side")
        ui.c_seed = control(ColourTransferRequest, "seed", widget="number")
    with gr.Row():
        ui.c_run = gr.Button("Transfer colours", variant="primary", elem_id="ot-colour-run")
        ui.c_stop = gr.Button("Stop", variant="stop", elem_id="ot-colour-stop")
    ui.c_status = gr.Markdown(elem_id="ot-colour-status")
    with gr.Row():
        ui.c_result = gr.Image(label="Re-coloured", type="numpy", interactive=False, height=280,
                               elem_id="ot-colour-result")
        ui.c_palettes = gr.Image(label="Palettes (top: photo, bottom: reference; width = weight)", type="numpy",
                                 interactive=False, height=120)
    with gr.Row():
        ui.c_json = gr.JSON(label="Run (JSON)")
        ui.c_files = gr.File(label="Downloads (plan.npz sparse, potentials.npz, PNGs, run.json)",
                             file_count="multiple", elem_id="ot-colour-files")


def _editor(label: str, elem_id: str) -> gr.ImageEditor:
    return gr.ImageEditor(label=label, type="numpy", image_mode="RGBA", sources=["upload", "clipboard"],
                          brush=gr.Brush(colors=["#000000"], default_size=14), canvas_size=(256, 256), height=300,
                          layers=False, transforms=(), elem_id=elem_id)


def _density_section(ui: SimpleNamespace) -> None:
    gr.Markdown("### 2 · Images as densities\nTwo grey images (upload, draw — black on white, then choose *dark* — "
                "or leave empty for a generated DOTmark-style density) on an m×m grid; the slider walks the plan's "
                "displacement interpolation (McCann) from the first to the second.")
    with gr.Row():
        with gr.Column():
            ui.d_a = _editor("First density (empty: generated)", "ot-density-a")
            ui.class_a = control(DensityRequest, "class_a")
        with gr.Column():
            ui.d_b = _editor("Second density (empty: generated)", "ot-density-b")
            ui.class_b = control(DensityRequest, "class_b")
    with gr.Row():
        ui.side = control(DensityRequest, "side")
        ui.d_cost = control(DensityRequest, "cost")
        ui.d_eps = control(DensityRequest, "epsilon", widget="number")
        ui.mass_where = control(DensityRequest, "mass_where", widget="radio")
        ui.frames = control(DensityRequest, "frames")
        ui.d_seed = control(DensityRequest, "seed", widget="number")
    with gr.Row():
        ui.d_run = gr.Button("Solve and interpolate", variant="primary", elem_id="ot-density-run")
        ui.d_stop = gr.Button("Stop", variant="stop", elem_id="ot-density-stop")
    ui.d_status = gr.Markdown(elem_id="ot-density-status")
    ui.frame_paths = gr.State([])
    with gr.Row():
        with gr.Column():
            ui.frame = gr.Image(label="Displacement interpolation", type="filepath", interactive=False, height=280,
                                elem_id="ot-frame")
            ui.t = gr.Slider(0.0, 1.0, value=0.0, step=0.01, label="t (0: first density, 1: second)", elem_id="ot-t",
                             info="Where along the displacement interpolation the picture is taken.")
        ui.d_files = gr.File(label="Downloads (plan.npz sparse, potentials.npz, interpolation.npy, PNGs, run.json)",
                             file_count="multiple", elem_id="ot-density-files")


def _cloud_section(ui: SimpleNamespace) -> None:
    gr.Markdown("### 3 · Point clouds\nTwo weighted point sets — uploaded (`.npy` or `.csv`, one point a row: x, y "
                "or x, y, z, and optionally a last column of weights) or generated — solved by MDOT-TNT and by exact "
                "EMD beside it. The plot draws the plan's strongest couplings as segments (darker: more mass).")
    with gr.Row():
        with gr.Column():
            ui.p_a = gr.File(label="First point set (.npy / .csv; empty: generated)", elem_id="ot-cloud-a", height=120)
            ui.kind_a = control(PointCloudRequest, "kind_a", elem_id="ot-cloud-kind-a")
        with gr.Column():
            ui.p_b = gr.File(label="Second point set (.npy / .csv; empty: generated)", elem_id="ot-cloud-b",
                             height=120)
            ui.kind_b = control(PointCloudRequest, "kind_b", elem_id="ot-cloud-kind-b")
    with gr.Row():
        ui.p_n = control(PointCloudRequest, "n", elem_id="ot-cloud-n")
        ui.p_weights = control(PointCloudRequest, "weights_column")
        ui.p_cost = control(PointCloudRequest, "cost")
        ui.p_eps = control(PointCloudRequest, "epsilon", widget="number", elem_id="ot-cloud-eps")
        ui.p_links = control(PointCloudRequest, "links")
        ui.p_seed = control(PointCloudRequest, "seed", widget="number")
    with gr.Row():
        ui.p_run = gr.Button("Solve between the clouds", variant="primary", elem_id="ot-cloud-run")
        ui.p_stop = gr.Button("Stop", variant="stop", elem_id="ot-cloud-stop")
    ui.p_status = gr.Markdown(elem_id="ot-cloud-status")
    with gr.Row():
        ui.p_plot = gr.Plot(label="The clouds and the plan's strongest couplings", elem_id="ot-cloud-plot")
        with gr.Column():
            ui.p_json = gr.JSON(label="Run (JSON)")
            ui.p_files = gr.File(label="Downloads (plan.npz sparse, potentials.npz, source.csv / target.csv, clouds.png, "
                                       "run.json)", file_count="multiple", elem_id="ot-cloud-files")


def _convergence_section(ui: SimpleNamespace) -> None:
    gr.Markdown("### 4 · Convergence: MDOT-TNT, Sinkhorn, log-domain Sinkhorn, ε-scaling Sinkhorn, exact EMD\n"
                "The same generated problem, each method traced against its own solver time: the marginal error of "
                "its plan and the relative cost gap of that plan rounded onto the polytope (a feasible plan) to "
                "the exact cost. Small ε is where Sinkhorn stalls or underflows.")
    with gr.Row():
        ui.v_a = control(ConvergenceRequest, "class_a")
        ui.v_b = control(ConvergenceRequest, "class_b")
        ui.v_side = control(ConvergenceRequest, "side", elem_id="ot-conv-side")
        ui.v_cost = control(ConvergenceRequest, "cost")
    with gr.Row():
        ui.v_eps = control(ConvergenceRequest, "epsilon", widget="number", elem_id="ot-conv-eps")
        ui.budget = control(ConvergenceRequest, "budget", elem_id="ot-budget")
        ui.v_seed = control(ConvergenceRequest, "seed", widget="number")
    with gr.Row():
        ui.v_run = gr.Button("Race the solvers", variant="primary", elem_id="ot-conv-run")
        ui.v_stop = gr.Button("Stop", variant="stop", elem_id="ot-conv-stop")
    ui.v_status = gr.Markdown(elem_id="ot-conv-status")
    ui.plot = gr.Plot(label="Marginal error and cost gap against time (log scales)", elem_id="ot-plot")
    ui.table = gr.Dataframe(headers=["method", "status", "seconds", "iterations", "marginal error", "cost gap",
                                     "message"], label="End points", interactive=False, elem_id="ot-table")
    ui.v_files = gr.File(label="Downloads (convergence.json, convergence.png, run.json)", file_count="multiple",
                         elem_id="ot-conv-files")


def build(demo: gr.Blocks) -> None:
    ui = SimpleNamespace()
    gr.Markdown(INTRO)
    gr.Markdown(PICK, elem_id="ot-advice")
    _colour_section(ui)
    _density_section(ui)
    _cloud_section(ui)
    _convergence_section(ui)
    _wire(ui)


# --- requests from what the page holds ------------------------------------------------------------------------------


def _photo(upload, what: str):
    """The upload as an array, read by the backend: a file that is not an image is its clear message (the event
    takes its inputs undecoded, ``preprocess=False``, so Gradio's raw decoding error never shows)."""
    from backends.common.imageio import to_rgb_array

    path = upload.get("path") if isinstance(upload, dict) else upload
    if not path:
        raise InputError(f"Upload the {what} (or pick an example pair).")
    return to_rgb_array(path)


def colour_request(source, reference, colours, epsilon, max_side, seed):
    """Inputs arrive undecoded (numbers as sent, images as file references).

    Args:
        source: The photo to re-colour (an image file).
        reference: The photo whose colours it takes on (an image file).
    """
    return ColourTransferRequest(source=_photo(source, "photo to re-colour"),
                                 reference=_photo(reference, "photo whose colours it takes"), colours=colours,
                                 epsilon=epsilon, max_side=max_side, seed=0 if seed is None else seed)


def density_request(first, second, class_a, class_b, side, cost, epsilon, mass_where, frames, seed):
    """Inputs arrive undecoded (numbers as sent, the editors' pictures as file references).

    Args:
        first: The first density's image editor value (upload or drawing; empty: generate class_a).
        second: The second density's image editor value (empty: generate class_b).
    """
    return DensityRequest(source=editor_picture(first), target=editor_picture(second), class_a=class_a, class_b=class_b,
                          side=side, cost=cost, epsilon=epsilon, mass_where=mass_where, frames=frames,
                          seed=0 if seed is None else seed)


def cloud_request(first, second, weights_column, kind_a, kind_b, n, cost, epsilon, links, seed):
    """Uploaded files are read here (the backend's reader: a clear message for a file that is not a point table).

    Args:
        first: The first point set: a .npy or .csv file of n rows (x, y[, z][, weight]); empty: generate kind_a.
        second: The second point set, the same dimension; empty: generate kind_b.
    """
    from backends.ot.clouds import read_points

    return PointCloudRequest(source=None if not first else read_points(first),
                             target=None if not second else read_points(second), weights_column=bool(weights_column),
                             kind_a=kind_a, kind_b=kind_b, n=n, cost=cost, epsilon=epsilon, links=links,
                             seed=0 if seed is None else seed)


def convergence_request(class_a, class_b, side, cost, epsilon, budget, seed):
    return ConvergenceRequest(class_a=class_a, class_b=class_b, side=side, cost=cost, epsilon=epsilon, budget=budget,
                              seed=0 if seed is None else seed)


# --- what a result shows ----------------------------------------------------------------------------------------------


def _solver_line(info: dict) -> str:
    reached = "" if info["converged"] else f" · ⚠️ {info['message']}"
    return (f"γ reached {info['gamma']:.4g} (ε = {info['epsilon']:.3g}) · marginal error of the entropic plan "
            f"{info['marginal_error']:.1e}, of the rounded plan {info['plan_marginal_error']:.1e} · "
            f"{info['iterations']['newton_steps']} Newton steps, {info['iterations']['annealing_steps']} annealing "
            f"steps · {info['solve_seconds']:.2f} s on `{info['device']}` ({info['dtype']}){reached}")


def show_colour(request, result, paths):
    status = (f"**Transport cost {result.cost:.5g}** (squared RGB distance scaled to [0, 1]; "
              f"{result.cost_rgb:.5g} in RGB units) · {len(result.source_weights)} × "
              f"{len(result.reference_weights)} colours · " + _solver_line(result.info))
    return status, result.result, paths["palettes"].as_posix(), result.to_json(), [str(p) for p in paths.values()]


def show_densities(request, result, paths):
    notes = "".join(f"\n\nℹ️ {n}" for n in result.info["notes"])
    status = (f"**Transport cost {result.cost:.5g}** (n = {result.a.size}, {result.info['cost_name']}) · "
              + _solver_line(result.info) + notes)
    frames = [str(paths[k]) for k in sorted(paths) if k.startswith("frame_")]
    return status, frames[0], gr.update(value=0.0), frames, [str(p) for p in paths.values()]


def show_clouds(request, result, paths):
    from backends.ot.clouds import cloud_figure

    info = result.info
    status = (f"**Transport cost {result.cost:.5g}** ({info['cost_name']}, scaled to [0, 1]; "
              f"{info['cost_units']:.5g} in your units) · **exact EMD {result.exact_cost:.5g}** "
              f"({info['emd_seconds']:.2f} s) · **gap to EMD {info['relative_gap']:.1e}** · "
              f"{len(result.wa)} × {len(result.wb)} points, {info['dimension']}-D · " + _solver_line(info)
              + "".join(f"\n\nℹ️ {s}" for s in info["inputs"]))
    return status, cloud_figure(result, request.links), result.to_json(), [str(p) for p in paths.values()]


def _g(value) -> str:
    return "—" if value is None else f"{value:.3g}"


def show_convergence(request, result, paths):
    from backends.ot.methods import relative_gap
    from backends.ot.outputs import convergence_figure

    rows = [[r["label"], r["status"], _g(r["seconds"]), r["iterations"], _g(r["marginal_error"]),
             _g(r["relative_gap"]), r["message"]] for r in result.runs]
    first = {}  # method → solver seconds to its first rounded plan within 1e-2 of exact
    for r in result.runs:
        hit = next((p[0] for p in r["trace"] if relative_gap(p[2], result.exact_cost) <= 1e-2), None)
        if hit is not None:
            first[r["label"]] = hit
    entropic = [r for r in result.runs if r["relative_gap"] is not None and r["method"] != "emd"]
    best = min(entropic, key=lambda r: r["relative_gap"], default=None)
    fastest = min(first.items(), key=lambda kv: kv[1], default=None)
    status = (f"**Exact cost {result.exact_cost:.6g}** (POT's network simplex) · n = {result.info['n']}, "
              f"ε = {result.info['epsilon']:.3g} on `cpu` (float64)"
              + (f" · here, first within 1e-2 of exact: **{fastest[0]}** ({fastest[1]:.3g} s)" if fastest else
                 " · no method came within 1e-2 of exact in its budget")
              + (f" · smallest entropic gap: {best['label']} {best['relative_gap']:.1e}" if best else "")
              + f"\n\n{result.info['advice']}")
    return status, convergence_figure(result), rows, [str(p) for p in paths.values()]


def frame_at(t, frames):
    """The interpolation frame nearest to t."""
    if not frames:
        return gr.skip()
    return frames[min(len(frames) - 1, max(0, round(float(t) * (len(frames) - 1))))]


def _wire(ui: SimpleNamespace) -> None:
    bind_action(COLOUR, trigger=ui.c_run.click, status=ui.c_status,
                inputs=[ui.source, ui.reference, ui.colours, ui.c_eps, ui.max_side, ui.c_seed],
                outputs=[ui.c_status, ui.c_result, ui.c_palettes, ui.c_json, ui.c_files], to_request=colour_request,
                show=show_colour, running="k-means palettes, then MDOT-TNT…", preprocess=False)
    bind_stop(ui.c_stop, COLOUR, ui.c_status, api_name="ot_colour_transfer_stop")
    bind_action(DENSITIES, trigger=ui.d_run.click, status=ui.d_status,
                inputs=[ui.d_a, ui.d_b, ui.class_a, ui.class_b, ui.side, ui.d_cost, ui.d_eps, ui.mass_where,
                        ui.frames, ui.d_seed],
                outputs=[ui.d_status, ui.frame, ui.t, ui.frame_paths, ui.d_files], to_request=density_request,
                show=show_densities, running="Solving…", preprocess=False)
    bind_stop(ui.d_stop, DENSITIES, ui.d_status, api_name="ot_densities_stop")
    ui.t.change(frame_at, inputs=[ui.t, ui.frame_paths], outputs=ui.frame, api_visibility="private",
                show_progress="hidden", queue=False)
    bind_action(CLOUDS, trigger=ui.p_run.click, status=ui.p_status,
                inputs=[ui.p_a, ui.p_b, ui.p_weights, ui.kind_a, ui.kind_b, ui.p_n, ui.p_cost, ui.p_eps, ui.p_links,
                        ui.p_seed],
                outputs=[ui.p_status, ui.p_plot, ui.p_json, ui.p_files], to_request=cloud_request, show=show_clouds,
                running="MDOT-TNT, then exact EMD…")
    bind_stop(ui.p_stop, CLOUDS, ui.p_status, api_name="ot_point_clouds_stop")
    bind_action(CONVERGENCE, trigger=ui.v_run.click, status=ui.v_status,
                inputs=[ui.v_a, ui.v_b, ui.v_side, ui.v_cost, ui.v_eps, ui.budget, ui.v_seed],
                outputs=[ui.v_status, ui.plot, ui.table, ui.v_files], to_request=convergence_request,
                show=show_convergence, running="Racing the solvers (one after another, each within its budget)…")
    bind_stop(ui.v_stop, CONVERGENCE, ui.v_status, api_name="ot_convergence_stop")


TAB = TabSpec(name="ot", title="Optimal Transport", build=build)
