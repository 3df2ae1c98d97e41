"""Counterfactual tab (RCSB): draw a region, pick a target class, get counterfactuals that change only it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from app.components.action_button import bind_action
from app.components.errors import user_errors
from app.components.failures import listen
from app.components.imageeditor import editor_to_image_and_mask
from app.components.model_choices import model_choices
from app.components.params import control, documented
from app.tabs import TabSpec
from backends.common.errors import InputError
from backends.counterfactual.actions import GENERATE
from backends.counterfactual.data import CLASSES
from backends.counterfactual.models import BRIDGE_KINDS, CLASSIFIER_KINDS
from backends.counterfactual.requests import CounterfactualRequest, RegionRequest

EXAMPLES = sorted((Path(__file__).parents[1] / "static" / "examples" / "counterfactual").glob("*.png"))
INTRO = ("**RCSB** (ICLR 2025): a classifier-guided Schrödinger-bridge inpainter changes *only the region you draw* "
         "until the classifier's decision flips. Outside the region every pixel stays the input's, bit for bit. "
         "The embedded models work on 32×32 images of the project's primitive world (shown enlarged).")


def editor_value(image, mask=None) -> dict:
    """An ImageEditor value: the model-size image enlarged, and a layer with the mask painted (if any)."""
    from backends.counterfactual.outputs import editor_layers

    big, layer = editor_layers(image, mask)
    return {"background": big, "layers": [layer], "composite": big}


def prediction_label(probs: dict[str, float]) -> dict[str, float]:
    return dict(sorted(probs.items(), key=lambda kv: -kv[1]))


def _source_column(ui: SimpleNamespace) -> None:
    from backends.counterfactual.models import REAL_BRIDGE, default_models

    ui.upload = gr.Image(label="Image", type="filepath", image_mode="RGB", sources=["upload", "clipboard"],
                         height=200, elem_id="cf-upload")
    ui.examples = gr.Examples([[str(p)] for p in EXAMPLES], inputs=ui.upload, label="Examples (held-out renders)")
    ui.shown = gr.State(None)  # the upload the editor and the prediction are of
    ui.prediction = gr.Label(label="Classifier's prediction", num_top_classes=5, elem_id="cf-prediction")
    start_bridge, start_classifier = default_models()
    ui.model_md = gr.Markdown(
        f"Published models present here: `{start_bridge}` and `{start_classifier}` are chosen by default."
        if start_bridge == REAL_BRIDGE else "", elem_id="cf-model")
    with gr.Accordion("Models", open=False):
        ui.bridge = gr.Dropdown(model_choices("counterfactual", BRIDGE_KINDS, details="source"), value=start_bridge,
                                label="Bridge", elem_id="cf-bridge",
                                info="The region-constrained Schrödinger bridge that repaints the region.")
        ui.classifier = gr.Dropdown(model_choices("counterfactual", CLASSIFIER_KINDS, details="source"),
                                    value=start_classifier, label="Classifier", elem_id="cf-classifier",
                                    info="The classifier whose decision the counterfactual flips (it also guides "
                                         "the bridge).")


def _region_column(ui: SimpleNamespace) -> None:
    from backends.counterfactual.outputs import VIEW

    ui.editor = gr.ImageEditor(
        label="Region that may change (paint with the brush)", type="numpy", image_mode="RGBA",
        format="png", layers=gr.LayerOptions(allow_additional_layers=False), transforms=(),
        brush=gr.Brush(colors=[("#ff0050", 0.55)], color_mode="fixed", default_size=16), sources=(),
        height=VIEW + 120, canvas_size=(VIEW, VIEW), elem_id="cf-editor",
    )
    with gr.Row():
        ui.area = control(RegionRequest, "area")
        ui.cell = control(RegionRequest, "cell")
    ui.auto_btn = gr.Button("Automatic region (Integrated Gradients)", elem_id="cf-auto")
    gr.Markdown("*Integrated Gradients* marks the pixels that made the classifier decide as it did; "
                "the automatic region covers the strongest of them.")
    ui.heat = gr.Image(label="Attribution heat map", type="numpy", height=160, interactive=False)


def _settings_column(ui: SimpleNamespace) -> None:
    ui.target = gr.Dropdown(list(CLASSES), value="sphere", label="Target class", elem_id="cf-target",
                            info="What the classifier should see after the edit.")
    ui.samples = control(CounterfactualRequest, "num_samples")
    ui.steps = control(CounterfactualRequest, "num_inference_steps", elem_id="cf-steps")
    ui.scale = control(CounterfactualRequest, "guidance_scale")
    ui.tau = control(CounterfactualRequest, "start_fraction")
    ui.seed = control(CounterfactualRequest, "seed", widget="number")
    with gr.Row():
        ui.run = gr.Button("Generate counterfactuals", variant="primary", elem_id="cf-run")
        ui.stop = gr.Button("Stop", variant="stop", elem_id="cf-stop")
    ui.preview = gr.Image(label="Preview (x̂0: the bridge's current guess of the final image)", type="numpy",
                          height=160, interactive=False, elem_id="cf-preview")


def build(demo: gr.Blocks) -> None:
    ui = SimpleNamespace()
    gr.Markdown(INTRO)
    with gr.Row():
        for column in (_source_column, _region_column, _settings_column):
            with gr.Column(scale=1):
                column(ui)
    ui.status = gr.Markdown(elem_id="cf-status")
    ui.gallery = gr.Gallery(label="Counterfactual · |difference| · region", columns=6, height=320, format="png",
                            elem_id="cf-gallery")
    with gr.Row():
        ui.summary = gr.JSON(label="Run (JSON)", elem_id="cf-json")
        ui.files = gr.File(label="Downloads (PNG + JSON)", file_count="multiple", elem_id="cf-files")
    _wire(ui)


# the service (and torch) load on first use, never when the app is built
@user_errors
@documented(CounterfactualRequest)
def on_image(image, bridge, classifier):
    """The classifier's prediction for an uploaded image, and the image ready for painting a region.

    Gets the upload undecoded (preprocess=False): the backend reads the file, so a file that is not an image is
    its clear message rather than Gradio's raw decoding error.

    Args:
        image: The image file to classify (an upload).
    """
    from backends.counterfactual.service import classify, load_models

    path = image.get("path") if isinstance(image, dict) else None
    if not path:  # nothing uploaded: what is shown stays
        return gr.skip(), gr.skip(), gr.skip(), gr.skip()
    models = load_models(bridge, classifier)
    pred = classify(path, models)
    info = (f"Models: bridge `{models.bridge_id}`, classifier `{pred.classifier_id}` on `{models.device}` · "
            f"model input {models.size}×{models.size}")
    if pred.warning:
        gr.Warning(pred.warning, title="Outside the embedded models' world")
        info += f"\n\n⚠️ {pred.warning}"
    elif pred.domain is None:
        info += " · published models: no embedded model in use, so the input is not checked against a synthetic world"
    return editor_value(pred.image), prediction_label(pred.probabilities), info, path


@user_errors
@documented(CounterfactualRequest)
def on_models(bridge, classifier, target):
    """Switch the bridge and classifier; the target class list becomes the new classifier's.

    Args:
        target: The target class chosen now (kept when the new classifier knows it).
    """
    from backends.counterfactual.service import load_models

    models = load_models(bridge, classifier)
    value = target if target in models.classes else models.classes[0]
    info = (f"Models: bridge `{models.bridge_id}`, classifier `{models.classifier_id}` on `{models.device}` · "
            f"model input {models.size}×{models.size} · load an image again to use them")
    return gr.update(choices=list(models.classes), value=value), info


@user_errors
@documented(RegionRequest)
def on_auto(image_and_region, area, cell, bridge, classifier):
    """The automatic region: the cells whose pixels made the classifier decide as it did (Integrated Gradients).

    Args:
        image_and_region: The image editor's value (its background is the image; a painted region is replaced).
        bridge: The bridge model (a registry id).
        classifier: The classifier model (a registry id) whose decision is attributed.
    """
    from backends.counterfactual.outputs import heat_image
    from backends.counterfactual.service import load_models, prepare_image, suggest_region

    image, _ = editor_to_image_and_mask(image_and_region)
    models = load_models(bridge, classifier)
    region = suggest_region(RegionRequest(image=image, area=area, cell=int(cell)), models)
    small = prepare_image(image, models.size)  # what the model sees; no need to classify again
    return editor_value(small, region.mask), heat_image(region.heatmap)


def to_request(image_and_region, target, num_samples, num_inference_steps, guidance_scale, start_fraction, seed,
               bridge, classifier):
    """Args:
        image_and_region: The image editor's value: the image as its background, the region painted on its layer.
    """
    image, mask = editor_to_image_and_mask(image_and_region)
    if mask is None or not mask.any():
        raise InputError("Paint the region that may change first (or press 'Automatic region').")
    return CounterfactualRequest(image=image, mask=mask, target=target, num_samples=num_samples,
                                 num_inference_steps=num_inference_steps, guidance_scale=guidance_scale,
                                 start_fraction=start_fraction, seed=0 if seed is None else seed, bridge=bridge,
                                 classifier=classifier)


def show_result(request, result, paths):
    """The run's files come from the backend's writer (the CLI writes the same); the tab only shows them."""
    from backends.counterfactual.outputs import gallery_items, result_status

    return result_status(result), gallery_items(result), result.to_json(), [str(p) for p in paths.values()]


def preview_image(x0):
    from backends.counterfactual.outputs import enlarged

    return enlarged(x0)


def _wire(ui: SimpleNamespace) -> None:
    # Light actions (a prediction, the automatic region, a model switch) have their own queue and
    # never wait behind a generation (which holds the shared "gpu" queue). Progress and errors show on a
    # status line; a failed action changes nothing else, and a refused upload gives way to the image in use.
    light = {"concurrency_id": "counterfactual-light", "concurrency_limit": 4}
    image_io = {"inputs": [ui.upload, ui.bridge, ui.classifier], "outputs": [ui.editor, ui.prediction, ui.model_md,
                                                                            ui.shown],
                "status": ui.model_md, "restore": [(ui.upload, ui.shown)], "preprocess": False, **light}
    # once per upload: the image's change event fires twice when one image replaces another (each message twice)
    listen(ui.upload.upload, on_image, api_name="counterfactual_classify", **image_io)
    listen(ui.examples.load_input_event.then, on_image, api_visibility="private", **image_io)
    listen([ui.bridge.change, ui.classifier.change], on_models, status=ui.model_md,
           inputs=[ui.bridge, ui.classifier, ui.target], outputs=[ui.target, ui.model_md],
           api_name="counterfactual_models", **light)
    listen(ui.auto_btn.click, on_auto, status=ui.status, progress_on=[ui.heat],
           inputs=[ui.editor, ui.area, ui.cell, ui.bridge, ui.classifier], outputs=[ui.editor, ui.heat],
           api_name="counterfactual_region", **light)
    bind_action(GENERATE, trigger=ui.run.click, stop=ui.stop, status=ui.status, preview=ui.preview,
                to_preview=preview_image,
                inputs=[ui.editor, ui.target, ui.samples, ui.steps, ui.scale, ui.tau, ui.seed, ui.bridge,
                        ui.classifier],
                outputs=[ui.preview, ui.status, ui.gallery, ui.summary, ui.files], to_request=to_request,
                show=show_result, running="Running the bridge…",
                stopped="Stopped by the user: this run made no counterfactuals. The gallery, JSON and downloads "
                        "below (if any) are the previous run's.")


TAB = TabSpec(name="counterfactual", title="Counterfactual", build=build)
