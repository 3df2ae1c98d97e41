"""Text in Image tab (localized text-generation layers): generate words, find the layers that write them,
edit the words while the rest stays, block toxic words, and fine-tune only the localized layers."""

from __future__ import annotations

import gradio as gr
import numpy as np
from PIL import Image, ImageDraw

from app.components.downloads import new_output_dir
from app.components.errors import user_errors
from app.components.failures import listen
from app.components.imageeditor import editor_to_image_and_mask
from app.components.longwork import CANCELS, stream
from app.components.model_download import download_beside
from app.tabs import TabSpec
from backends.common.errors import Cancelled, InputError
from backends.common.imageio import upscale
from backends.textedit.models import DEFAULT_BLOCK_LIST, DEFAULT_MODEL, MODEL_CHOICES, PRESETS

ZOOM = 4  # the embedded model's 32×128 images are shown 4× enlarged
ACTION = "textedit"
TEMPLATES = ["a sign that says", "a t-shirt that says", "a brick wall that says", "a label that says",
             "a poster that says", "a wooden board that says"]
TYPED_LABEL = "the layers typed beside"
LAYER_COLUMNS = ["index", "name", "OCR-F1 B", "OCR-F1 A", "Levenshtein B", "PSNR (dB)", "layer params",
                 "text K/V share %", "chosen", "read"]


def model_choices() -> list[tuple[str, str]]:
    from backends.common.registry import default_registry, model_status

    specs = {s.id: s for s in default_registry().for_capability("textedit")}
    out = []
    for mid in MODEL_CHOICES:
        spec = specs.get(mid)
        present = "present" if spec is not None and model_status(spec).present else "missing"
        out.append((f"{mid} ({present})", mid))
    return out


def zoom(image: np.ndarray) -> np.ndarray:
    return upscale(image, ZOOM) if image.shape[0] <= 128 else image


def readout(readings, label: str = "") -> str:
    head = f"**{label}** " if label else ""
    return head + " · ".join(r.line() for r in readings)


def layer_rows(result) -> list[list]:
    chosen = set(result.chosen)
    return [[s.index, s.name, round(s.f1_b, 3), round(s.f1_a, 3), round(s.levenshtein_b, 2), round(s.psnr, 1), s.params,
             round(100 * s.share, 3), "★" if s.name in chosen else "", s.read] for s in result.layers]


def bar_frame(result):
    import pandas as pd

    chosen = set(result.chosen)
    return pd.DataFrame({"layer": [f"{s.index}" for s in result.layers], "OCR-F1 (B)": [s.f1_b for s in result.layers],
                         "layer type": ["chosen" if s.name in chosen else "other" for s in result.layers]})


def heat_map(result, cell: int = 26) -> np.ndarray:
    """OCR-F1(B) per layer (rows) × head (columns), white → dark blue, chosen layers marked with a star."""
    rows, cols = len(result.head_f1), max(len(r) for r in result.head_f1)
    left, top = 40, 18
    img = Image.new("RGB", (left + cols * cell + 4, top + rows * cell + 4), "white")
    d = ImageDraw.Draw(img)
    for h in range(cols):
        d.text((left + h * cell + 8, 3), f"h{h}", fill="black")
    chosen = set(result.chosen)
    for i, (s, row) in enumerate(zip(result.layers, result.head_f1, strict=True)):
        d.text((2, top + i * cell + 7), f"{'*' if s.name in chosen else ' '}{s.index}", fill="black")
        for h, v in enumerate(row):
            box = (left + h * cell, top + i * cell, left + (h + 1) * cell - 2, top + (i + 1) * cell - 2)
            if v is None:
                d.rectangle(box, outline="#ccc")
                continue
            c = (int(255 - 215 * v), int(255 - 170 * v), int(255 - 60 * v))
            d.rectangle(box, fill=c)
            d.text((box[0] + 3, box[1] + 7), f"{v:.1f}", fill="black" if v < 0.6 else "white")
    return np.asarray(img)


def region_box(value) -> tuple[int, int, int, int] | None:
    """The drawn strokes' bounding box in model pixels (None when nothing is drawn)."""
    if not isinstance(value, dict) or value.get("background") is None:
        return None
    _, mask = editor_to_image_and_mask(value)
    if mask is None or not mask.any():
        return None
    ys, xs = np.nonzero(mask)
    f = ZOOM
    return int(xs.min()) // f, int(ys.min()) // f, -(-(int(xs.max()) + 1) // f), -(-(int(ys.max()) + 1) // f)


def files_of(result, prefix: str) -> list[str]:
    from backends.textedit.outputs import write

    return [str(p) for p in write(result, new_output_dir(prefix)).values()]


def layers_arg(text: str) -> list[str] | None:
    items = [x.strip() for x in (text or "").replace(";", ",").split(",") if x.strip()]
    return items or None


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
    with gr.Row():
        model = gr.Dropdown(model_choices(), value=DEFAULT_MODEL, label="Model", elem_id="te-model",
                            info="The diffusion model that writes: the small embedded one, or a published one "
                                 "once downloaded.")
        template = gr.Dropdown(TEMPLATES, value=TEMPLATES[0], allow_custom_value=True, label="Prompt template",
                               elem_id="te-template",
                               info="The prompt before the quoted text (the embedded model knows these six).")
        text = gr.Textbox("cat", label="Text in the image", max_length=40, elem_id="te-text",
                          info="The word to write (embedded model: 3–8 letters a–z); Localize and Edit start from it.")
        seed = gr.Number(0, precision=0, minimum=0, label="Seed", elem_id="te-seed",
                         info="Same seed and settings → the same image; every action draws its noise from it.")
        steps = gr.Slider(1, 100, value=PRESETS[DEFAULT_MODEL].num_inference_steps, step=1, label="Steps",
                          elem_id="te-steps", info="Denoising steps per image: fewer is faster and rougher.")
    model_md = gr.Markdown(elem_id="te-model-info")
    download_beside(model, "te")
    with gr.Row():
        gen_btn = gr.Button("Generate", variant="primary", elem_id="te-generate")
        stop_btn = gr.Button("Stop", variant="stop", elem_id="te-stop")
    with gr.Row():
        preview = gr.Image(label="Preview (x̂0 while sampling)", type="numpy", interactive=False, height=150,
                           elem_id="te-preview")
        image = gr.Image(label="Generated", type="numpy", interactive=False, height=150, format="png",
                         elem_id="te-image")
    gen_md = gr.Markdown(elem_id="te-gen-ocr")
    status = gr.Markdown(elem_id="te-status")
    with gr.Row():
        # Which layers Edit, Protect and Fine-tune patch is the person's choice: a Localize scan offers its
        # set here beside the preset and never replaces it by itself (one pair's best layer edits far less).
        layer_set = gr.Radio([("the model's preset layers", "preset"), (TYPED_LABEL, "typed")], value="preset",
                             label="Edit, Protect and Fine-tune go through", elem_id="te-layer-set", scale=2,
                             info="Which text layers the actions patch: the preset, the last Localize scan's "
                                  "(offered once it ran), or the names typed beside.")
        layers_box = gr.Textbox(label="Layers used (names or indices, comma-separated)", elem_id="te-layers",
                                scale=3, info="The layers the actions patch now; typing here chooses “typed”.")
    sets_state = gr.State({})  # this session's layer sets: source → {"layers": [...], "label": "..."}
    with gr.Tabs():
        with gr.Tab("Localize", id="te-tab-localize"):
            with gr.Row():
                loc_new = gr.Textbox("dog", label="Text B (patched in)", max_length=40, elem_id="te-loc-new",
                                     info="One layer at a time takes this word's keys/values; a layer that makes "
                                          "the image read it writes the text.")
                loc_pairs = gr.Slider(0, 16, value=0, step=1, label="Extra held-out word pairs", elem_id="te-loc-pairs",
                                      info="More word pairs, averaged for a steadier ranking; each adds a full scan.")
                loc_start = gr.Slider(0, 100, value=0, step=1, label="Patch from step", elem_id="te-loc-start",
                                      info="The patch acts from this denoising step on (0: all steps); later "
                                           "starts leave more of the original.")
                loc_heads = gr.Checkbox(True, label="Per head too", elem_id="te-loc-heads",
                                        info="Also patch every attention head alone (the heat map); slower.")
                loc_topk = gr.Number(0, precision=0, minimum=0, label="Top-k (0: choose by the rule)",
                                     elem_id="te-loc-topk",
                                     info="Keep the k best layers; 0: those within 75% of the best that read B "
                                          "more than A.")
            loc_btn = gr.Button("Localize", variant="primary", elem_id="te-localize")
            loc_md = gr.Markdown(elem_id="te-loc-summary")
            loc_layers = gr.Textbox(label="Layers this scan chose", interactive=False, elem_id="te-loc-layers",
                                    info="Offered under “Edit, Protect and Fine-tune go through”; the preset "
                                         "stays in use until you choose them.")
            with gr.Row():
                bars = gr.BarPlot(x="layer", y="OCR-F1 (B)", color="layer type", y_lim=[0, 1],
                                  title="OCR-F1(B) when patching one layer", elem_id="te-bars")
                heat = gr.Image(label="OCR-F1(B) per layer × head", type="numpy", interactive=False,
                                elem_id="te-heat")
            table = gr.Dataframe(headers=LAYER_COLUMNS, interactive=False, label="Per layer (click a row)",
                                 elem_id="te-layer-table")
            with gr.Row():
                layer_pick = gr.Dropdown([], label="Show the patched image of layer", elem_id="te-layer-pick",
                                         info="The image with only this layer patched (or click a table row).")
                layer_img = gr.Image(label="Patched image", type="numpy", interactive=False, height=150,
                                     elem_id="te-layer-image")
            loc_files = gr.File(label="Downloads (CSV, JSON, PNG, run card)", file_count="multiple",
                                elem_id="te-loc-files")
        with gr.Tab("Edit", id="te-tab-edit"):
            with gr.Row():
                edit_new = gr.Textbox("dog", label="New text", max_length=40, elem_id="te-edit-new",
                                      info="The word to write instead; only the chosen layers see it.")
                edit_start = gr.Number(PRESETS[DEFAULT_MODEL].edit_start_step, precision=0, minimum=0,
                                       label="Patch from step (the model's preset)", elem_id="te-edit-start",
                                       info="The layers take the new word from this step on; earlier steps keep "
                                            "the original's layout.")
            region = gr.ImageEditor(label="Optional: paint over the text's region (the rest stays the original)",
                                    type="numpy", image_mode="RGBA", format="png", transforms=(), sources=(),
                                    layers=gr.LayerOptions(allow_additional_layers=False),
                                    brush=gr.Brush(colors=[("#ff0050", 0.5)], color_mode="fixed", default_size=12),
                                    height=260, elem_id="te-region")
            edit_btn = gr.Button("Edit the text", variant="primary", elem_id="te-edit")
            edit_gallery = gr.Gallery(label="Original · edited · difference · prompt swap (baseline)", columns=2,
                                      height="auto", object_fit="contain", format="png",
                                      elem_id="te-edit-gallery")
            edit_md = gr.Markdown(elem_id="te-edit-ocr")
            edit_files = gr.File(label="Downloads", file_count="multiple", elem_id="te-edit-files")
        with gr.Tab("Protect", id="te-tab-protect"):
            block = gr.Textbox(", ".join(DEFAULT_BLOCK_LIST), label="Block list (editable)", lines=2,
                               elem_id="te-block", info="Words never written: a prompt asking for one gets a "
                                                        "benign word through the text layers instead.")
            with gr.Row():
                prot_text = gr.Textbox("idiot", label="Text to generate", max_length=40, elem_id="te-prot-text",
                                       info="The word asked for; the protected image shows what a blocked one becomes.")
                benign = gr.Textbox("", label="Benign word (empty: drawn with the seed)", max_length=40,
                                    elem_id="te-prot-benign", info="What a blocked word is replaced with.")
            prot_btn = gr.Button("Generate unprotected vs protected", variant="primary", elem_id="te-protect")
            prot_gallery = gr.Gallery(label="Unprotected · protected", columns=2, height="auto", object_fit="contain",
                                      format="png", elem_id="te-prot-gallery")
            prot_md = gr.Markdown(elem_id="te-prot-md")
            prot_files = gr.File(label="Downloads", file_count="multiple")
        with gr.Tab("Fine-tune", id="te-tab-finetune"):
            with gr.Row():
                ft_target = gr.Radio(["localized", "all", "random"], value="localized", label="LoRA on",
                                     elem_id="te-ft-target",
                                     info="The layers used above (the paper), every attention layer, or as many "
                                          "random ones (the control).")
                ft_steps = gr.Slider(1, 500, value=40, step=1, label="Training steps", elem_id="te-ft-steps",
                                     info="Optimizer steps on renders of training words, the same for every target.")
                ft_lr = gr.Number(1e-4, label="Learning rate", elem_id="te-ft-lr", minimum=0, maximum=1e-2,
                                  info="AdamW step size of the LoRA weights (0 < rate ≤ 0.01).")
            with gr.Row():
                ft_batch = gr.Slider(1, 32, value=8, step=1, label="Batch", elem_id="te-ft-batch",
                                     info="Word images per training step: more is steadier and slower.")
                ft_words = gr.Slider(1, 66, value=12, step=1, label="Held-out words to read before/after",
                                     elem_id="te-ft-words",
                                     info="Words never trained on, generated and read by OCR before and after: "
                                          "the score.")
            ft_btn = gr.Button("Fine-tune", variant="primary", elem_id="te-finetune")
            ft_md = gr.Markdown(elem_id="te-ft-md")
            ft_loss = gr.LinePlot(x="step", y="loss", title="Training loss", elem_id="te-ft-loss")
            ft_files = gr.File(label="Downloads (adapter.safetensors, result, run card)", file_count="multiple",
                               elem_id="te-ft-files")
            with gr.Row():
                adapter = gr.File(label="Adapter to load (.safetensors)", file_types=[".safetensors"],
                                  elem_id="te-adapter")
                ad_btn = gr.Button("Generate with the adapter", elem_id="te-adapter-generate")
            with gr.Row():
                ad_image = gr.Image(label="With the adapter", type="numpy", interactive=False, height=150,
                                    elem_id="te-adapter-image")
                ad_md = gr.Markdown(elem_id="te-adapter-md")
    loc_state = gr.State(None)

    def common(model_v, template_v, seed_v, steps_v) -> dict:
        return dict(model=model_v, template=template_v or "", seed=int(seed_v or 0),
                    num_inference_steps=int(steps_v))

    def run(work, request, action_label, progress, show, preview_out=True):
        token = CANCELS.start(request, ACTION)
        try:
            for kind, item in stream(work(token), progress):
                if kind == "preview":
                    if preview_out:
                        yield ("preview", zoom(item))
                else:
                    yield ("result", item)
        except Cancelled:
            yield ("stopped", f"{action_label}: stopped by the user.")
        finally:
            CANCELS.finish(request, ACTION, token)

    @user_errors
    def on_model(model_v):
        from backends.textedit.service import load_pipeline

        pipe, preset, _ = load_pipeline(model_v)
        total = sum(p.numel() for p in getattr(pipe, "denoiser", None).parameters()) if hasattr(pipe, "denoiser") \
            else sum(p.numel() for p in pipe.unet.parameters())
        layers = ", ".join(preset.edit_layers) or "none yet"
        info = (f"Model **{model_v}** on `{pipe.device}` · {len(pipe.layers)} text layers · denoiser "
                f"{total / 1e6:.2f} M parameters · localized layers: {layers} (source: {preset.source})")
        return (info, ", ".join(preset.edit_layers), gr.update(value=preset.num_inference_steps),
                gr.update(value=preset.edit_start_step))

    @user_errors
    def on_generate(model_v, template_v, text_v, seed_v, steps_v, request: gr.Request, progress=gr.Progress()):
        from backends.textedit.service import GenerateRequest, generate

        req = GenerateRequest(text=text_v, **common(model_v, template_v, seed_v, steps_v))
        yield gr.update(), gr.update(), gr.update(), "Generating…", gr.update()
        for kind, item in run(lambda t: generate(req, t), request, "Generate", progress, None):
            if kind == "preview":
                yield item, gr.update(), gr.update(), gr.update(), gr.update()
            elif kind == "stopped":
                yield gr.update(), gr.update(), gr.update(), item, gr.update()
            else:
                shown = zoom(item.image)
                yield (shown, shown, readout(item.readings, "OCR:"),
                       f"Generated “{text_v}” with **{item.model}** on "
                       f"`{item.device}` in {item.seconds:.1f} s.", {"background": shown, "layers": [], "composite": shown})

    @user_errors
    def on_localize(model_v, template_v, text_v, seed_v, steps_v, new_v, pairs_v, start_v, heads_v, topk_v,
                    request: gr.Request, progress=gr.Progress()):
        from backends.textedit.localize import LocalizeRequest, localize

        req = LocalizeRequest(text=text_v, new_text=new_v, extra_pairs=int(pairs_v), start_step=int(start_v),
                              per_head=bool(heads_v), top_k=int(topk_v) if topk_v else None,
                              **common(model_v, template_v, seed_v, steps_v))
        nothing = (gr.update(),) * 8
        yield ("Scanning the layers…",) + nothing
        for kind, item in run(lambda t: localize(req, t), request, "Localize", progress, None):
            if kind == "preview":
                yield (gr.update(), gr.update(), gr.update(), gr.update(), gr.update(), item, gr.update(),
                       gr.update(), gr.update())
            elif kind == "stopped":
                yield (item,) + nothing
            else:
                r = item
                labels = [f"{s.index}: {s.name}" for s in r.layers]
                best = max(r.layers, key=lambda s: s.f1_b)
                md = (f"**Chosen layers: {', '.join(r.chosen)}** — their text K/V projections are "
                      f"{100 * r.chosen_share:.2f}% of the denoiser's {r.denoiser_params / 1e6:.2f} M parameters "
                      f"(counted as the paper counts SDXL's 0.61%; the whole attention layers, which the LoRA "
                      f"trains, {100 * r.chosen_module_share:.2f}%). Best single layer: {best.index} (OCR-F1 B "
                      f"{best.f1_b:.2f}). Pairs: {', '.join(f'{a}→{b}' for a, b in r.pairs)}. Model **{r.model}** on "
                      f"`{r.device}`, OCR by {r.engine}, {r.seconds:.0f} s. They are offered under *Edit, Protect "
                      f"and Fine-tune go through*; those actions keep the layers chosen there until you pick them.")
                first = labels[[s.name for s in r.layers].index(r.chosen[0])]
                yield (md, bar_frame(r), heat_map(r), layer_rows(r), gr.update(choices=labels, value=first),
                       zoom(r.patched[r.chosen[0]]), files_of(r, "textedit-localize"), ", ".join(r.chosen),
                       {name: img for name, img in r.patched.items()})

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

        found = layer_set(model_v, layers_arg(chosen_v), source="localized")
        sets = {**(sets or {}), "localized": {"layers": found.layers, "label": found.label()}}
        return gr.update(choices=set_choices(sets), value=choice_v), sets

    def on_choose_set(choice_v, sets):
        """The layers of the chosen set into the box the actions read (typed: the box stays as typed)."""
        chosen = (sets or {}).get(choice_v)
        return ", ".join(chosen["layers"]) if chosen else gr.update()

    def on_pick(label, patched):
        if not patched or not label:
            return gr.update()
        name = label.split(": ", 1)[-1]
        return zoom(patched[name]) if name in patched else gr.update()

    def on_row(patched, evt: gr.SelectData):
        if not patched:
            return gr.update(), gr.update()
        names = list(patched)
        row = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
        name = names[int(row)]
        return f"{row}: {name}", zoom(patched[name])

    @user_errors
    def on_edit(model_v, template_v, text_v, seed_v, steps_v, new_v, layers_v, start_v, region_v,
                request: gr.Request, progress=gr.Progress()):
        from backends.textedit.edit import EditRequest, edit

        req = EditRequest(text=text_v, new_text=new_v, layers=layers_arg(layers_v),
                          start_step=None if start_v in (None, "") else int(start_v), region=region_box(region_v),
                          **common(model_v, template_v, seed_v, steps_v))
        yield gr.update(), "Editing…", gr.update()
        for kind, item in run(lambda t: edit(req, t), request, "Edit", progress, None, preview_out=False):
            if kind == "stopped":
                yield gr.update(), item, gr.update()
            elif kind == "result":
                r = item
                gallery = [(zoom(r.original), f"original “{text_v}”"), (zoom(r.edited), f"edited → “{new_v}”"),
                           (zoom(r.difference), "|edited − original|"), (zoom(r.prompt_swap), "prompt swap (baseline)")]
                extra = f" PSNR outside the region: {r.psnr_outside_region:.1f} dB." if r.region else ""
                md = (f"{readout(r.readings_original, 'Original:')}<br>{readout(r.readings_edited, 'Edited:')}<br>"
                      f"{r.note}{extra} Model **{r.model}** on `{r.device}`, {r.seconds:.1f} s.")
                yield gallery, md, files_of(r, "textedit-edit")

    @user_errors
    def on_protect(model_v, template_v, seed_v, steps_v, text_v, block_v, benign_v, layers_v,
                   request: gr.Request, progress=gr.Progress()):
        from backends.textedit.protect import ProtectRequest, protect

        req = ProtectRequest(text=text_v, block_list=block_v, benign_text=benign_v or None,
                             layers=layers_arg(layers_v), **common(model_v, template_v, seed_v, steps_v))
        yield gr.update(), "Generating…", gr.update()
        for kind, item in run(lambda t: protect(req, t), request, "Protect", progress, None, preview_out=False):
            if kind == "stopped":
                yield gr.update(), item, gr.update()
            elif kind == "result":
                r = item
                gallery = [(zoom(r.unprotected), "unprotected"), (zoom(r.protected), "protected")]
                md = (f"{r.note}<br>{readout(r.readings_unprotected, 'Unprotected:')}<br>"
                      f"{readout(r.readings_protected, 'Protected:')}<br>Model **{r.model}** on `{r.device}`.")
                yield gallery, md, files_of(r, "textedit-protect")

    @user_errors
    def on_finetune(model_v, template_v, seed_v, steps_v, target_v, train_v, lr_v, batch_v, words_v, layers_v,
                    request: gr.Request, progress=gr.Progress()):
        import pandas as pd

        from backends.textedit.lora import FinetuneRequest, finetune

        req = FinetuneRequest(target=target_v, layers=layers_arg(layers_v), train_steps=int(train_v),
                              learning_rate=float(lr_v or 1e-4), batch_size=int(batch_v), eval_words=int(words_v),
                              **common(model_v, template_v, seed_v, steps_v))
        yield "Fine-tuning…", gr.update(), gr.update(), gr.update()
        for kind, item in run(lambda t: finetune(req, t), request, "Fine-tune", progress, None, preview_out=False):
            if kind == "stopped":
                yield item, gr.update(), gr.update(), gr.update()
            elif kind == "result":
                r = item
                md = (f"LoRA rank {req.rank} on **{r.target}** ({len(r.layers)} attention modules): "
                      f"{r.trainable_params:,} trainable parameters ({100 * r.trainable_share:.2f}% of the denoiser), "
                      f"{len(r.losses)} steps in {r.seconds:.0f} s.<br>Held-out words, OCR-F1 / accuracy: before "
                      f"**{r.before.f1:.2f} / {r.before.accuracy:.0%}**, after **{r.after.f1:.2f} / "
                      f"{r.after.accuracy:.0%}**. Model **{r.model}**.")
                paths = files_of(r, "textedit-lora")
                adapter_path = next(p for p in paths if p.endswith(".safetensors"))
                yield md, pd.DataFrame({"step": range(1, len(r.losses) + 1), "loss": r.losses}), paths, adapter_path

    @user_errors
    def on_adapter(model_v, template_v, text_v, seed_v, steps_v, file_v, request: gr.Request,
                   progress=gr.Progress()):
        from backends.textedit.lora import generate_adapted
        from backends.textedit.service import GenerateRequest

        if not file_v:
            raise InputError("Upload an adapter (.safetensors) or fine-tune first.")
        path = file_v if isinstance(file_v, str) else getattr(file_v, "name", None) or file_v.get("path")
        with open(path, "rb") as f:
            data = f.read()
        req = GenerateRequest(text=text_v, **common(model_v, template_v, seed_v, steps_v))
        for kind, item in run(lambda t: generate_adapted(req, data, t), request, "Adapter", progress, None,
                              preview_out=False):
            if kind == "stopped":
                yield gr.update(), item
            elif kind == "result":
                yield zoom(item.image), readout(item.readings, "With the adapter:")

    def on_stop(request: gr.Request) -> str:
        return "Stopping…" if CANCELS.cancel(request, ACTION) else "Nothing is running."

    base = [model, template, text, seed, steps]
    # Progress and errors show on each action's status line; a failed action changes nothing else
    listen(demo.load, on_model, status=model_md, inputs=model, outputs=[model_md, layers_box, steps, edit_start],
           api_name="textedit_model_info")
    listen(model.change, on_model, status=model_md, inputs=model,
           outputs=[model_md, layers_box, steps, edit_start], api_name=False)
    listen(gen_btn.click, on_generate, status=status, inputs=base, outputs=[preview, image, gen_md, status, region],
           api_name="textedit_generate", concurrency_id="gpu")
    localized = listen(loc_btn.click, on_localize, status=loc_md,
                       inputs=base + [loc_new, loc_pairs, loc_start, loc_heads, loc_topk],
                       outputs=[loc_md, bars, heat, table, layer_pick, layer_img, loc_files, loc_layers, loc_state],
                       api_name="textedit_localize", concurrency_id="gpu")
    # Layer sets: Localize offers its set, the person chooses; the actions read the layers box.
    gr.on([demo.load, model.change], on_layer_sets, inputs=model, outputs=[layer_set, sets_state],
          api_visibility="private", show_progress="hidden")
    localized.success(on_offer_localized, inputs=[model, loc_layers, layer_set, sets_state],
                      outputs=[layer_set, sets_state], api_visibility="private", show_progress="hidden")
    layer_set.input(on_choose_set, inputs=[layer_set, sets_state], outputs=layers_box, api_visibility="private",
                    queue=False, show_progress="hidden")
    layers_box.input(lambda: "typed", outputs=layer_set, api_visibility="private", queue=False,
                     show_progress="hidden")
    layer_pick.change(on_pick, inputs=[layer_pick, loc_state], outputs=layer_img, api_name="textedit_show_layer")
    table.select(on_row, inputs=loc_state, outputs=[layer_pick, layer_img], api_name=False)
    listen(edit_btn.click, on_edit, status=edit_md, inputs=base + [edit_new, layers_box, edit_start, region],
           outputs=[edit_gallery, edit_md, edit_files], api_name="textedit_edit", concurrency_id="gpu")
    listen(prot_btn.click, on_protect, status=prot_md,
           inputs=[model, template, seed, steps, prot_text, block, benign, layers_box],
           outputs=[prot_gallery, prot_md, prot_files], api_name="textedit_protect", concurrency_id="gpu")
    listen(ft_btn.click, on_finetune, status=ft_md,
           inputs=[model, template, seed, steps, ft_target, ft_steps, ft_lr, ft_batch, ft_words, layers_box],
           outputs=[ft_md, ft_loss, ft_files, adapter], api_name="textedit_finetune", concurrency_id="gpu")
    listen(ad_btn.click, on_adapter, status=ad_md, inputs=base + [adapter], outputs=[ad_image, ad_md],
           api_name="textedit_adapter_generate", concurrency_id="gpu")
    stop_btn.click(on_stop, outputs=status, api_name="textedit_stop", queue=False)


TAB = TabSpec(name="textedit", title="Text in Image", build=build)
