"""Text in Image tab (localized text-generation layers): generate words, find the layers that write them,
edit the words while the rest stays, block toxic words, and fine-tune only the localized layers.

Every long action is a backend Action (``backends/textedit/actions.py``) bound to its button; the tab
only turns its inputs into a request and a result into what it shows."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from app.components.action_button import bind_action, bind_stop
from app.components.errors import user_errors
from app.components.failures import listen
from app.components.imageeditor import editor_to_image_and_mask
from app.components.model_choices import model_choices
from app.components.model_download import download_beside
from app.components.params import control, documented
from app.components.typed_values import keep_typed_values
from app.tabs import TabSpec
from backends.common.params import field_spec
from backends.textedit.actions import ACTIONS, ADAPTER_GENERATE, EDIT, FINETUNE, GENERATE, LOCALIZE, PROTECT
from backends.textedit.models import DEFAULT_MODEL, PRESETS
from backends.textedit.requests import (
    TEMPLATES,
    AdapterRequest,
    EditRequest,
    FinetuneRequest,
    GenerateRequest,
    LocalizeRequest,
    ProtectRequest,
    Sampling,
)

TYPED_LABEL = "the layers typed beside"
LAYER_COLUMNS = ["index", "name", "OCR-F1 B", "OCR-F1 A", "Levenshtein B", "PSNR (dB)", "layer params",
                 "text K/V share %", "chosen", "read"]


def build(demo: gr.Blocks) -> None:
    gr.Markdown(
        "**Localized text layers** (Staniszewski et al., ICLR 2025): in a text-to-image diffusion model a few "
        "cross-attention layers write the text — their text key/value projections are under 1% of the "
        "parameters (SDXL 0.61%, SD3 0.23%, the small embedded model's top layer 0.55%). *Localize* finds them by giving one layer at a "
        "time the keys/values of another prompt; *Edit* swaps the words by patching only those layers; *Protect* "
        "swaps a blocked word for a benign one the same way; *Fine-tune* trains LoRA on those layers only. The "
        "embedded model writes words of 3–8 letters (a–z) on 32×128 images, shown enlarged; OCR (RapidOCR, "
        "tesseract) reads every image."
    )
    ui = SimpleNamespace()
    _generate_section(ui)
    _layer_set_row(ui)
    with gr.Tabs():
        with gr.Tab("Localize", id="te-tab-localize"):
            _localize_section(ui)
        with gr.Tab("Edit", id="te-tab-edit"):
            _edit_section(ui)
        with gr.Tab("Protect", id="te-tab-protect"):
            _protect_section(ui)
        with gr.Tab("Fine-tune", id="te-tab-finetune"):
            _finetune_section(ui)
    ui.loc_state = gr.State(None)  # the last scan's patched image per layer
    _wire_model(demo, ui)
    _wire_generate(ui)
    _wire_localize(demo, ui)
    _wire_edit_protect(ui)
    _wire_finetune(ui)
    bind_stop(ui.stop_btn, ACTIONS, ui.status, api_name="textedit_stop")  # one Stop for every action
    # its load handlers write some of these (layer sets): the page-wide keep_typed_values leaves those out
    keep_typed_values(demo, [ui.model, ui.template, ui.text, ui.seed, ui.steps, ui.layer_set, ui.layers_box,
                              ui.loc_new, ui.loc_pairs, ui.loc_start, ui.loc_heads, ui.loc_topk, ui.layer_pick,
                              ui.edit_new, ui.edit_start, ui.block, ui.prot_text, ui.benign, ui.ft_target,
                              ui.ft_steps, ui.ft_lr, ui.ft_batch, ui.ft_words])


# --- layout ----------------------------------------------------------------------------------------
def _generate_section(ui) -> None:
    with gr.Row():
        model = field_spec(Sampling, "model")
        ui.model = gr.Dropdown(model_choices("textedit", ids=model.param.choices), value=model.default,
                               elem_id="te-model", **_described(Sampling, "model"))
        ui.template = gr.Dropdown(list(TEMPLATES), value=field_spec(Sampling, "template").default,
                                  allow_custom_value=True, elem_id="te-template", **_described(Sampling, "template"))
        ui.text = gr.Textbox("cat", elem_id="te-text", **_described(GenerateRequest, "text"))
        ui.seed = control(Sampling, "seed", widget="number", elem_id="te-seed")
        ui.steps = _preset_control(Sampling, "num_inference_steps", PRESETS[DEFAULT_MODEL].num_inference_steps,
                                   gr.Slider, elem_id="te-steps")
    ui.model_md = gr.Markdown(elem_id="te-model-info")
    download_beside(ui.model, "te")
    with gr.Row():
        ui.gen_btn = gr.Button("Generate", variant="primary", elem_id="te-generate")
        ui.stop_btn = gr.Button("Stop", variant="stop", elem_id="te-stop")
    with gr.Row():
        ui.preview = gr.Image(label="Preview (x̂0 while sampling)", type="numpy", interactive=False, height=150,
                              elem_id="te-preview")
        ui.image = gr.Image(label="Generated", type="numpy", interactive=False, height=150, format="png",
                            elem_id="te-image")
    ui.gen_md = gr.Markdown(elem_id="te-gen-ocr")
    ui.status = gr.Markdown(elem_id="te-status")


def _described(request_type: type, name: str) -> dict:
    """The label and help of a field whose control the tab builds itself (a word with an example value, a list
    typed as text, a menu of models): the request's, as ``control`` would give them."""
    spec = field_spec(request_type, name)
    return {"label": spec.label, "info": spec.param.help}


def _preset_control(request_type: type, name: str, preset: int, kind: type, **layout):
    """The control of a field whose default (None) is the model's preset: it shows the chosen model's preset
    (``on_model`` sets it when the model changes), within the request's range. Built here, not by ``control``,
    because the page cannot show "empty": Gradio's number box turns it into 0."""
    spec = field_spec(request_type, name)
    if kind is gr.Slider:
        return gr.Slider(spec.param.minimum, spec.param.maximum, value=preset, step=spec.param.step or 1,
                         **_described(request_type, name), **layout)
    return gr.Number(preset, minimum=spec.param.minimum, maximum=spec.param.maximum, precision=0,
                     **_described(request_type, name), **layout)


def _layer_set_row(ui) -> None:
    with gr.Row():
        # Which layers Edit, Protect and Fine-tune patch is the person's choice: a Localize scan offers its
        # set here beside the preset and never replaces it by itself (one pair's best layer edits far less).
        ui.layer_set = gr.Radio([("the model's preset layers", "preset"), (TYPED_LABEL, "typed")], value="preset",
                                label="Edit, Protect and Fine-tune go through", elem_id="te-layer-set", scale=2,
                                info="Which text layers the actions patch: the preset, the last Localize scan's "
                                     "(offered once it ran), or the names typed beside.")
        ui.layers_box = gr.Textbox(", ".join(PRESETS[DEFAULT_MODEL].edit_layers), elem_id="te-layers", scale=3,
                                   label="Layers used (names or indices, comma-separated)",
                                   info="The layers the actions patch now; typing here chooses “typed”.")
    ui.sets_state = gr.State({})  # this session's layer sets: source → {"layers": [...], "label": "..."}


def _localize_section(ui) -> None:
    with gr.Row():
        ui.loc_new = gr.Textbox("dog", elem_id="te-loc-new", **_described(LocalizeRequest, "new_text"))
        ui.loc_pairs = control(LocalizeRequest, "extra_pairs", elem_id="te-loc-pairs")
        ui.loc_start = control(LocalizeRequest, "start_step", elem_id="te-loc-start")
        ui.loc_heads = control(LocalizeRequest, "per_head", elem_id="te-loc-heads")
        ui.loc_topk = control(LocalizeRequest, "top_k", widget="number", elem_id="te-loc-topk")
    ui.loc_btn = gr.Button("Localize", variant="primary", elem_id="te-localize")
    ui.loc_md = gr.Markdown(elem_id="te-loc-summary")
    ui.loc_layers = gr.Textbox(label="Layers this scan chose", interactive=False, elem_id="te-loc-layers",
                               info="Offered under “Edit, Protect and Fine-tune go through”; the preset "
                                    "stays in use until you choose them.")
    with gr.Row():
        ui.bars = gr.BarPlot(x="layer", y="OCR-F1 (B)", color="layer type", y_lim=[0, 1],
                             title="OCR-F1(B) when patching one layer", elem_id="te-bars")
        ui.heat = gr.Image(label="OCR-F1(B) per layer × head", type="numpy", interactive=False, elem_id="te-heat")
    ui.table = gr.Dataframe(headers=LAYER_COLUMNS, interactive=False, label="Per layer (click a row)",
                            elem_id="te-layer-table")
    with gr.Row():
        ui.layer_pick = gr.Dropdown([], label="Show the patched image of layer", elem_id="te-layer-pick",
                                    info="The image with only this layer patched (or click a table row).")
        ui.layer_img = gr.Image(label="Patched image", type="numpy", interactive=False, height=150,
                                elem_id="te-layer-image")
    ui.loc_files = gr.File(label="Downloads (CSV, JSON, PNG, run card)", file_count="multiple", elem_id="te-loc-files")


def _edit_section(ui) -> None:
    with gr.Row():
        ui.edit_new = gr.Textbox("dog", elem_id="te-edit-new", **_described(EditRequest, "new_text"))
        ui.edit_start = _preset_control(EditRequest, "start_step", PRESETS[DEFAULT_MODEL].edit_start_step, gr.Number,
                                        elem_id="te-edit-start")
    ui.region = gr.ImageEditor(label="Optional: paint over the text's region (the rest stays the original)",
                               type="numpy", image_mode="RGBA", format="png", transforms=(), sources=(),
                               layers=gr.LayerOptions(allow_additional_layers=False),
                               brush=gr.Brush(colors=[("#ff0050", 0.5)], color_mode="fixed", default_size=12),
                               height=260, elem_id="te-region")
    ui.edit_btn = gr.Button("Edit the text", variant="primary", elem_id="te-edit")
    ui.edit_gallery = gr.Gallery(label="Original · edited · difference · prompt swap (baseline)", columns=2,
                                 height="auto", object_fit="contain", format="png", elem_id="te-edit-gallery")
    ui.edit_md = gr.Markdown(elem_id="te-edit-ocr")
    ui.edit_files = gr.File(label="Downloads", file_count="multiple", elem_id="te-edit-files")


def _protect_section(ui) -> None:
    ui.block = gr.Textbox(field_spec(ProtectRequest, "block_list").default, lines=2, elem_id="te-block",
                          **_described(ProtectRequest, "block_list"))
    with gr.Row():
        ui.prot_text = gr.Textbox("idiot", elem_id="te-prot-text", **_described(ProtectRequest, "text"))
        ui.benign = control(ProtectRequest, "benign_text", elem_id="te-prot-benign")
    ui.prot_btn = gr.Button("Generate unprotected vs protected", variant="primary", elem_id="te-protect")
    ui.prot_gallery = gr.Gallery(label="Unprotected · protected", columns=2, height="auto", object_fit="contain",
                                 format="png", elem_id="te-prot-gallery")
    ui.prot_md = gr.Markdown(elem_id="te-prot-md")
    ui.prot_files = gr.File(label="Downloads", file_count="multiple")


def _finetune_section(ui) -> None:
    with gr.Row():
        ui.ft_target = control(FinetuneRequest, "target", widget="radio", elem_id="te-ft-target")
        ui.ft_steps = control(FinetuneRequest, "train_steps", elem_id="te-ft-steps")
        ui.ft_lr = control(FinetuneRequest, "learning_rate", widget="number", elem_id="te-ft-lr")
    with gr.Row():
        ui.ft_batch = control(FinetuneRequest, "batch_size", elem_id="te-ft-batch")
        ui.ft_words = control(FinetuneRequest, "eval_words", elem_id="te-ft-words")
    ui.ft_btn = gr.Button("Fine-tune", variant="primary", elem_id="te-finetune")
    ui.ft_md = gr.Markdown(elem_id="te-ft-md")
    ui.ft_loss = gr.LinePlot(x="step", y="loss", title="Training loss", elem_id="te-ft-loss")
    ui.ft_files = gr.File(label="Downloads (adapter.safetensors, result, run card)", file_count="multiple",
                          elem_id="te-ft-files")
    with gr.Row():
        ui.adapter = gr.File(label=field_spec(AdapterRequest, "adapter").label, file_types=[".safetensors"],
                             elem_id="te-adapter")
        ui.ad_btn = gr.Button("Generate with the adapter", elem_id="te-adapter-generate")
    with gr.Row():
        ui.ad_image = gr.Image(label="With the adapter", type="numpy", interactive=False, height=150,
                               elem_id="te-adapter-image")
        ui.ad_md = gr.Markdown(elem_id="te-adapter-md")


# --- requests: what the inputs ask for ------------------------------------------------------------
# Each function's parameters are the API's (bind_action): named as the request's fields, in the inputs' order. A
# default None makes the API's parameter optional where its box starts empty (steps: the model's preset).
def _set(**values) -> dict:
    """The fields given: an emptied box (None) leaves the request's default."""
    return {k: v for k, v in values.items() if v is not None}


def _generate_request(model, template, text, seed, num_inference_steps=None):
    return GenerateRequest(**_set(model=model, template=template, text=text, seed=seed,
                                  num_inference_steps=num_inference_steps))


def _localize_request(model, template, text, seed, num_inference_steps=None, new_text=None, extra_pairs=None,
                      start_step=None, per_head=None, top_k=None):
    return LocalizeRequest(**_set(model=model, template=template, text=text, seed=seed,
                                  num_inference_steps=num_inference_steps, new_text=new_text, extra_pairs=extra_pairs,
                                  start_step=start_step, per_head=per_head, top_k=top_k))


def _edit_request(model, template, text, seed, num_inference_steps=None, new_text=None, layers=None, start_step=None,
                  region_painting=None):
    """Args:
        region_painting: The region editor's value (its background is the generated image): paint over the text;
            outside the painted box the original is kept. Nothing painted: the whole image may change.
    """
    from backends.textedit.outputs import region_box
    from backends.textedit.requests import layers_list

    mask = None
    if isinstance(region_painting, dict) and region_painting.get("background") is not None:
        mask = editor_to_image_and_mask(region_painting)[1]
    return EditRequest(**_set(model=model, template=template, text=text, seed=seed,
                              num_inference_steps=num_inference_steps, new_text=new_text, layers=layers_list(layers),
                              start_step=start_step, region=region_box(mask)))


def _protect_request(model, template, seed, num_inference_steps=None, text=None, block_list=None, benign_text=None,
                     layers=None):
    from backends.textedit.requests import layers_list

    return ProtectRequest(**_set(model=model, template=template, seed=seed, num_inference_steps=num_inference_steps,
                                 text=text, block_list=block_list, benign_text=benign_text or None,
                                 layers=layers_list(layers)))


def _finetune_request(model, template, seed, num_inference_steps=None, target=None, train_steps=None,
                      learning_rate=None, batch_size=None, eval_words=None, layers=None):
    from backends.textedit.requests import layers_list

    return FinetuneRequest(**_set(model=model, template=template, seed=seed, num_inference_steps=num_inference_steps,
                                  target=target, train_steps=train_steps, learning_rate=learning_rate,
                                  batch_size=batch_size, eval_words=eval_words, layers=layers_list(layers)))


def _adapter_request(model, template, text, seed, num_inference_steps=None, adapter=None):
    path = adapter if isinstance(adapter, str) or adapter is None else getattr(adapter, "name", None) or adapter.get("path")
    return AdapterRequest(**_set(model=model, template=template, text=text, seed=seed,
                                 num_inference_steps=num_inference_steps), adapter=Path(path) if path else None)


# --- results: what a run shows -------------------------------------------------------------------
def _files(paths) -> list[str]:
    return [str(p) for p in paths.values()]


def _show_generate(request, r, paths):
    from backends.textedit.outputs import enlarge, readout

    shown = enlarge(r.image)
    status = f"Generated “{request.text}” with **{r.model}** on `{r.device}` in {r.seconds:.1f} s."
    return status, shown, readout(r.readings, "OCR:"), {"background": shown, "layers": [], "composite": shown}


def _show_localize(request, r, paths):
    from backends.textedit.outputs import heat_map, layer_bars, layer_rows, localize_text

    labels = [f"{s.index}: {s.name}" for s in r.layers]
    first = labels[[s.name for s in r.layers].index(r.chosen[0])]
    return (localize_text(r), layer_bars(r), heat_map(r), layer_rows(r), gr.update(choices=labels, value=first),
            _files(paths), ", ".join(r.chosen), dict(r.patched))


def _show_edit(request, r, paths):
    from backends.textedit.outputs import edit_text, enlarge

    gallery = [(enlarge(r.original), f"original “{request.text}”"), (enlarge(r.edited), f"edited → “{request.new_text}”"),
               (enlarge(r.difference), "|edited − original|"), (enlarge(r.prompt_swap), "prompt swap (baseline)")]
    return edit_text(r), gallery, _files(paths)


def _show_protect(request, r, paths):
    from backends.textedit.outputs import enlarge, protect_text

    return protect_text(r), [(enlarge(r.unprotected), "unprotected"), (enlarge(r.protected), "protected")], _files(paths)


def _show_finetune(request, r, paths):
    from backends.textedit.outputs import finetune_text, loss_frame

    return finetune_text(r, request.rank), loss_frame(r), _files(paths), str(paths["adapter"])


def _show_adapter(request, r, paths):
    from backends.textedit.outputs import enlarge, readout

    return readout(r.readings, "With the adapter:"), enlarge(r.image)


def _preview(image):
    from backends.textedit.outputs import enlarge

    return enlarge(image)


# --- wiring ----------------------------------------------------------------------------------------
@user_errors
@documented(Sampling)
def on_model(model):
    """The model line (device, text layers, size, localized layers), and the model's presets: its localized
    layers, its sampling steps and the step its edits start from."""
    from backends.textedit.service import model_info

    info, layers, steps, start = model_info(model)
    return info, ", ".join(layers), steps, start


@user_errors
def model_line(model) -> str:
    """The model line alone: what the page's load shows (the controls start with the first model's presets)."""
    from backends.textedit.service import model_info

    return model_info(model)[0]


def _wire_model(demo, ui) -> None:
    # Progress and errors show on each action's status line; a failed action changes nothing else
    # The page's load writes only the model line: the layers, steps and start step start as the first model's
    # presets, and a value sent now to a control not yet drawn would be written into it once it is, over what
    # the person may have typed by then
    listen(demo.load, model_line, status=ui.model_md, inputs=ui.model, outputs=ui.model_md, api_name=False)
    listen(ui.model.change, on_model, status=ui.model_md, inputs=ui.model,
           outputs=[ui.model_md, ui.layers_box, ui.steps, ui.edit_start], api_name="textedit_model_info")
    # Layer sets: Localize offers its set, the person chooses; the actions read the layers box.
    gr.on([demo.load, ui.model.change], on_layer_sets, inputs=ui.model, outputs=[ui.layer_set, ui.sets_state],
          api_visibility="private", show_progress="hidden")
    ui.layer_set.input(on_choose_set, inputs=[ui.layer_set, ui.sets_state], outputs=ui.layers_box,
                       api_visibility="private", queue=False, show_progress="hidden")
    ui.layers_box.input(lambda: "typed", outputs=ui.layer_set, api_visibility="private", queue=False,
                        show_progress="hidden")


def _wire_generate(ui) -> None:
    """Generate keeps its API's output order (preview, image, OCR, status, region), which API clients index;
    the finished image also replaces the last x̂0 preview."""
    bind_action(GENERATE, trigger=ui.gen_btn.click, status=ui.status, preview=ui.preview, to_preview=_preview,
                inputs=[ui.model, ui.template, ui.text, ui.seed, ui.steps],
                outputs=[ui.preview, ui.image, ui.gen_md, ui.status, ui.region], to_request=_generate_request,
                show=_show_generated, running="Generating…", stopped="Generate: stopped by the user.")


def _show_generated(request, result, paths):
    status, image, ocr, region = _show_generate(request, result, paths)
    return status, image, image, ocr, region


def _wire_localize(demo, ui) -> None:
    base = [ui.model, ui.template, ui.text, ui.seed, ui.steps]
    localized = bind_action(
        LOCALIZE, trigger=ui.loc_btn.click, status=ui.loc_md, preview=ui.layer_img, to_preview=_preview,
        inputs=base + [ui.loc_new, ui.loc_pairs, ui.loc_start, ui.loc_heads, ui.loc_topk],
        outputs=[ui.loc_md, ui.bars, ui.heat, ui.table, ui.layer_pick, ui.layer_img, ui.loc_files, ui.loc_layers,
                 ui.loc_state],  # the API's order
        to_request=_localize_request, show=_show_localize, running="Scanning the layers…",
        stopped="Localize: stopped by the user.")
    localized.success(on_pick, inputs=[ui.layer_pick, ui.loc_state], outputs=ui.layer_img, api_visibility="private",
                      show_progress="hidden")
    localized.success(on_offer_localized, inputs=[ui.model, ui.loc_layers, ui.layer_set, ui.sets_state],
                      outputs=[ui.layer_set, ui.sets_state], api_visibility="private", show_progress="hidden")
    ui.layer_pick.change(on_pick, inputs=[ui.layer_pick, ui.loc_state], outputs=ui.layer_img,
                         api_name="textedit_show_layer")
    ui.table.select(on_row, inputs=ui.loc_state, outputs=[ui.layer_pick, ui.layer_img], api_name=False)


def _wire_edit_protect(ui) -> None:
    base = [ui.model, ui.template, ui.text, ui.seed, ui.steps]
    bind_action(EDIT, trigger=ui.edit_btn.click, status=ui.edit_md,
                inputs=base + [ui.edit_new, ui.layers_box, ui.edit_start, ui.region],
                outputs=[ui.edit_gallery, ui.edit_md, ui.edit_files], to_request=_edit_request, show=_show_edit,
                running="Editing…", stopped="Edit: stopped by the user.")
    bind_action(PROTECT, trigger=ui.prot_btn.click, status=ui.prot_md,
                inputs=[ui.model, ui.template, ui.seed, ui.steps, ui.prot_text, ui.block, ui.benign, ui.layers_box],
                outputs=[ui.prot_gallery, ui.prot_md, ui.prot_files], to_request=_protect_request, show=_show_protect,
                running="Generating…", stopped="Protect: stopped by the user.")


def _wire_finetune(ui) -> None:
    bind_action(FINETUNE, trigger=ui.ft_btn.click, status=ui.ft_md,
                inputs=[ui.model, ui.template, ui.seed, ui.steps, ui.ft_target, ui.ft_steps, ui.ft_lr, ui.ft_batch,
                        ui.ft_words, ui.layers_box],
                outputs=[ui.ft_loss, ui.ft_files, ui.adapter], to_request=_finetune_request, show=_show_finetune,
                running="Fine-tuning…", stopped="Fine-tune: stopped by the user.")
    bind_action(ADAPTER_GENERATE, trigger=ui.ad_btn.click, status=ui.ad_md,
                inputs=[ui.model, ui.template, ui.text, ui.seed, ui.steps, ui.adapter], outputs=[ui.ad_image, ui.ad_md],
                to_request=_adapter_request, show=_show_adapter, running="Generating with the adapter…",
                stopped="Adapter: stopped by the user.")


# --- layer sets and the per-layer view (light, no model work) --------------------------------------
def set_choices(sets: dict) -> list[tuple[str, str]]:
    return [(sets[k]["label"], k) for k in ("preset", "localized") if k in sets] + [(TYPED_LABEL, "typed")]


def on_layer_sets(model_v):
    """A model's layer sets start as its preset alone (a scan of another model does not apply)."""
    from backends.common.errors import StudioError
    from backends.textedit.localize import layer_set

    try:
        preset = layer_set(model_v)
        sets = {"preset": {"layers": preset.layers, "label": preset.label()}}
    except StudioError:  # no preset yet, or the model is missing or broken: on_model says why
        sets = {}
    return gr.update(choices=set_choices(sets), value="preset" if sets else "typed"), sets


@user_errors
def on_offer_localized(model_v, chosen_v, choice_v, sets):
    """After a scan: offer its layers beside the preset, keeping the set in use as it was."""
    from backends.textedit.localize import layer_set
    from backends.textedit.requests import layers_list

    found = layer_set(model_v, layers_list(chosen_v), source="localized")
    sets = {**(sets or {}), "localized": {"layers": found.layers, "label": found.label()}}
    return gr.update(choices=set_choices(sets), value=choice_v), sets


def on_choose_set(choice_v, sets):
    """The layers of the chosen set into the box the actions read (typed: the box stays as typed)."""
    chosen = (sets or {}).get(choice_v)
    return ", ".join(chosen["layers"]) if chosen else gr.update()


@documented()
def on_pick(layer, patched):
    """The image of the last Localize run (this session's) with only one layer patched.

    Args:
        layer: The layer, as the run's list names it: "index: name" (e.g. "3: up_blocks.1.attentions.0.transformer_blocks.0.attn2").
        patched: This session's last scan: each layer's patched image (kept on the server).
    """
    if not patched or not layer:
        return gr.update()
    name = layer.split(": ", 1)[-1]
    return _preview(patched[name]) if name in patched else gr.update()


def on_row(patched, evt: gr.SelectData):
    if not patched:
        return gr.update(), gr.update()
    names = list(patched)
    row = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
    name = names[int(row)]
    return f"{row}: {name}", _preview(patched[name])


TAB = TabSpec(name="textedit", title="Text in Image", build=build)
