"""3D Layout tab (Build-A-Scene): place 3D boxes, generate, then insert / change / move objects stage by stage."""

from __future__ import annotations

import html
import json
from pathlib import Path

import gradio as gr
import numpy as np

from app.components.downloads import new_output_dir
from app.components.errors import user_errors
from app.components.failures import listen
from app.components.longwork import CANCELS, stream
from app.components.model_download import download_beside
from app.components.warmup import warm_up_in_background
from app.tabs import TabSpec
from backends.common import jsontext
from backends.common.errors import Cancelled, InputError
from backends.layout3d.layout import MAX_BOXES, Layout, preview_depth
from backends.layout3d.models import DEFAULT_MODEL, MODEL_CHOICES, MODEL_PARTS
from backends.synth.scene import COLORS, ROOMS

STATIC = Path(__file__).resolve().parents[1] / "static"
VIEW = 320  # generated images are shown enlarged to this size
COLUMNS = ["prompt", "x", "y", "z", "w", "d", "h", "yaw"]
MASK_COLOURS = np.array([(230, 25, 75), (60, 180, 75), (67, 99, 216), (245, 130, 49), (145, 30, 180)], np.uint8)

DEFAULT_LAYOUT = {
    "scene_prompt": ROOMS[0].prompt,
    "boxes": [
        {"prompt": "a red cube", "center": [-0.6, 0.9, 0.35], "size": [0.7, 0.7, 0.7], "yaw_deg": 20},
        {"prompt": "a blue sphere", "center": [0.65, 1.2, 0.35], "size": [0.7, 0.7, 0.7], "yaw_deg": 0},
    ],
}

EDITOR_HTML = """
<div class="box-editor" id="l3d-editor-root" data-colours="COLOURS">
  <div class="be-toolbar">
    <input class="be-prompt" type="text" value="a green cone" aria-label="prompt of a new box"
           title="What goes in the next box; words the model does not know are flagged as you type." />
    <button data-act="add" class="be-add" title="Adds a box with this prompt in free floor space">Add box</button>
    <button data-act="delete" class="be-delete">Delete box</button>
    <span class="be-sep"></span>
    <button data-act="translate">Move</button><button data-act="rotate">Rotate</button>
    <button data-act="scale">Scale</button><button data-act="view">Camera view</button>
  </div>
  <div class="be-flag" role="status" aria-live="polite"></div>
  <div class="be-canvas"></div>
  <div class="be-status"></div>
</div>
""".replace("COLOURS", html.escape(json.dumps(COLORS)))  # boxes take the colour their prompt names

EDITOR_CSS = """
.box-editor { display: flex; flex-direction: column; gap: 4px; }
.be-toolbar { display: flex; flex-wrap: wrap; gap: 4px; align-items: center; }
.be-toolbar button { padding: 2px 8px; border: 1px solid #bbb; border-radius: 4px; background: #fafafa; cursor: pointer; }
.be-toolbar input { flex: 1; min-width: 120px; padding: 2px 6px; border: 1px solid #bbb; border-radius: 4px; }
.be-canvas { width: 100%; min-height: 240px; }
.be-canvas canvas { display: block; width: 100%; border-radius: 6px; touch-action: none; }
.be-status { font-size: 12px; color: #555; }
.be-flag { font-size: 12px; color: #b45309; min-height: 1em; }
"""


def _editor_js() -> str:
    url = f"/gradio_api/file={STATIC / 'layout3d' / 'box_editor.js'}"
    return f"""
    const start = () => {{
      const ta = document.querySelector('#l3d-json textarea');
      if (!ta) {{ setTimeout(start, 200); return; }}
      import({json.dumps(url)}).then((m) => m.mount(element.querySelector('.box-editor'), ta, server))
        .catch((e) => {{ element.querySelector('.be-status').textContent = '3D editor failed to load: ' + e; }});
    }};
    start();
    """


# --- the editor's light calls (server functions: answered at once, never queued behind generation) --
def add_box_text(text: str, prompt: str) -> str:
    """The layout JSON with one more box standing in free floor space (``layout.add_box``)."""
    from backends.layout3d.layout import add_box

    return layout_text(add_box(Layout.from_json(text), prompt).to_dict())


def editor_add_box(data: dict) -> dict:
    """The 3D editor's *Add box*: ``{"layout": text, "prompt": str}`` → ``{"layout": new text}`` or
    ``{"error": message}`` (shown in the editor's status line)."""
    try:
        return {"layout": add_box_text(str(data["layout"]), str(data["prompt"]))}
    except InputError as e:
        return {"error": str(e)}
    except (KeyError, TypeError):
        return {"error": "The editor sent no layout and prompt."}


def prompt_flag(prompt: str, model_id: str) -> str:
    """The line shown beside a prompt as it is typed: its words the model does not know, or nothing."""
    from backends.layout3d.vocabulary import model_vocabulary, unknown_in

    words = unknown_in(prompt or "", model_vocabulary(model_id or DEFAULT_MODEL))
    if not words:
        return ""
    return (f"⚠️ {model_id or DEFAULT_MODEL} does not know {', '.join(repr(w) for w in words)}: it knows colours, "
            "shapes and rooms only, so that object will not come out as asked.")


def editor_prompt_words(data: dict) -> str:
    """The 3D editor's check of the new box's prompt, as it is typed: ``{"prompt", "model"}`` → the flag line."""
    try:
        return prompt_flag(str(data.get("prompt", "")), str(data.get("model") or DEFAULT_MODEL))
    except (AttributeError, TypeError):
        return ""


def layout_words(text: str, model_id: str) -> str:
    """Unknown words of every prompt in the layout JSON (the table and JSON paths), or nothing; a layout
    that does not parse says nothing here (the layout status says what is wrong)."""
    from backends.layout3d.vocabulary import vocabulary_check

    try:
        layout = Layout.from_json(text)
    except InputError:
        return ""
    message = vocabulary_check(model_id or DEFAULT_MODEL, layout).message()
    return f"⚠️ {message}" if message else ""


# --- per-session scenes: the backend's store (memory budget; an expired scene is said so) -------
_STORE = None


def scenes():
    global _STORE
    if _STORE is None:  # torch loads on first use, never when the app is built
        from backends.common.settings import get_settings
        from backends.layout3d.sessions import SceneStore

        _STORE = SceneStore(get_settings().layout3d_scene_memory_mb)
    return _STORE


def warm_up() -> None:
    """Load the model (and torch, open3d) when the page opens, so the first Generate does not wait for it."""

    def work():
        from backends.layout3d.service import warm_up

        warm_up(DEFAULT_MODEL)

    warm_up_in_background("layout3d", work)


def _key(request) -> str:
    return getattr(request, "session_hash", None) or "anonymous"


# --- conversions ---------------------------------------------------------------------------
def layout_text(data: dict) -> str:
    """Layout JSON with one line per box (short enough to read and edit in the textbox)."""
    boxes = ",\n  ".join(json.dumps(b) for b in data.get("boxes", []))
    return "{\"scene_prompt\": " + json.dumps(data.get("scene_prompt", "")) + ",\n \"boxes\": [\n  " + boxes + "\n ]}"


def layout_rows(layout: Layout) -> list[list]:
    return [[b.prompt, *[round(v, 3) for v in b.center], *[round(v, 3) for v in b.size], round(b.yaw_deg, 1)]
            for b in layout.boxes]


def rows_to_layout_dict(rows, scene_prompt: str) -> dict:
    boxes = []
    values = rows.values.tolist() if hasattr(rows, "values") else (rows or [])
    for i, row in enumerate(values):
        if row is None or all(v in (None, "") for v in row):
            continue
        try:
            prompt = str(row[0])
            x, y, z, w, d, h, yaw = (float(v) for v in row[1:8])
        except (TypeError, ValueError, IndexError):
            raise InputError(f"Row {i + 1} of the box table needs a prompt and seven numbers (x y z w d h yaw).") from None
        boxes.append({"prompt": prompt, "center": [x, y, z], "size": [w, d, h], "yaw_deg": yaw})
    return {"scene_prompt": scene_prompt, "boxes": boxes}


def enlarge(image: np.ndarray, size: int = VIEW) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.fromarray(image).resize((size, size), Image.BICUBIC))


def overlay_masks(stage, stages) -> np.ndarray:
    """The stage's image with every object's mask (as created) tinted in its box colour."""
    img = stage.image.astype(np.float32)
    for j, idx in sorted(stage.created.items()):
        mask = stages[idx].object_mask if idx < len(stages) else None
        if mask is None:
            continue
        c = MASK_COLOURS[j % len(MASK_COLOURS)].astype(np.float32)
        img[mask] = 0.45 * img[mask] + 0.55 * c
    return img.clip(0, 255).astype(np.uint8)


def show_scene(session, show_masks: bool, seconds: float | None, warning: str = ""):
    """The scene's last stage, its history and its files (written by the backend's writer, as the CLI does)."""
    from backends.layout3d.outputs import scene_card, write_scene

    stages = session.stages
    last = stages[-1]
    main = overlay_masks(last, stages) if show_masks else last.image
    gallery = [(enlarge(s.image, 128), f"{s.index}: {s.action}") for s in stages]
    card = scene_card(session)
    paths = write_scene(stages, card, new_output_dir("layout3d"))
    files = [str(paths[k]) for k in ("image", "depth", "layout", "summary") if k in paths]
    took = f" · {seconds:.1f} s" if seconds is not None else ""
    status = (f"**Stage {last.index}: {last.action}** · made by `{card['model']}` on `{card['device']}`{took} · "
              f"{len(stages)} stage(s) in the history")
    if warning:
        status += f"\n\n⚠️ {warning}"
    return enlarge(main), gallery, status, card, files


def build(demo: gr.Blocks) -> None:
    gr.set_static_paths([STATIC])
    gr.Markdown(
        "**Build-A-Scene** (ICLR 2025): place 3D boxes with prompts, generate, then — stage by stage — insert, "
        "re-prompt, move, resize, rotate or delete boxes while every earlier object stays as it was (latent "
        "blending + Dynamic Self-Attention; moves warp the object by its 3D box and re-invert it). The embedded "
        "model is a 64×64 box-depth-conditioned diffusion model trained here on the project's primitive world: "
        "it knows colours (red, orange, yellow, green, cyan, blue, purple, pink), shapes (cube, sphere, "
        "cylinder, cone, torus) and six rooms."
    )
    with gr.Row():
        with gr.Column(scale=5):
            gr.HTML(EDITOR_HTML, html_template="${value}", css_template=EDITOR_CSS, js_on_load=_editor_js(),
                    elem_id="l3d-editor", apply_default_css=False,
                    server_functions=[editor_add_box, editor_prompt_words])
            words_md = gr.Markdown(elem_id="l3d-words")  # unknown words of the layout's prompts, as typed
            scene_prompt = gr.Dropdown([r.prompt for r in ROOMS], value=DEFAULT_LAYOUT["scene_prompt"],
                                       allow_custom_value=True, label="Scene (the empty-scene prompt)",
                                       elem_id="l3d-scene",
                                       info="The empty scene the boxes stand in: one of the six rooms the embedded model knows.")
            table = gr.Dataframe(headers=COLUMNS, datatype=["str"] + ["number"] * 7, column_count=8,
                                 interactive=True, label=f"Boxes (metres, z up; ≤ {MAX_BOXES})",
                                 elem_id="l3d-table")
            with gr.Accordion("Layout JSON (edit, paste, load)", open=True):
                layout_json = gr.Textbox(layout_text(DEFAULT_LAYOUT), lines=4, max_lines=10,
                                         label="Layout JSON", elem_id="l3d-json",
                                         info="The layout as text: edit, paste or load it; the editor, table and depth follow it.")
                with gr.Row():
                    load_btn = gr.UploadButton("Load layout JSON", file_types=[".json"], elem_id="l3d-load")
                    rebuild_btn = gr.UploadButton("Rebuild from stages.json", file_types=[".json"],
                                                  elem_id="l3d-rebuild")
        with gr.Column(scale=4):
            depth = gr.Image(label="Box depth (the condition; near = bright)", type="numpy", height=240,
                             interactive=False, elem_id="l3d-depth")
            layout_status = gr.Markdown(elem_id="l3d-layout-status")
            with gr.Row():
                model = gr.Dropdown(list(MODEL_CHOICES), value=DEFAULT_MODEL, label="Model", elem_id="l3d-model",
                                    info="Embedded: the small model trained here; sd15 (+ LooseControl): the paper's stack once downloaded.")
                seed = gr.Number(0, precision=0, minimum=0, label="Seed", elem_id="l3d-seed",
                                 info="Same seed, same layout, same settings → the same pictures.")
            download_beside(model, "l3d", parts=MODEL_PARTS)
            with gr.Row():
                steps = gr.Slider(2, 50, value=20, step=1, label="DDIM steps (paper: 20)", elem_id="l3d-steps",
                                  info="How many denoising steps make each picture: fewer is faster, rougher.")
                guidance = gr.Slider(0, 15, value=5.0, step=0.5, label="CFG (embedded 5; SD 7.5)",
                                     info="Classifier-free guidance: how strongly the picture follows the prompt.")
            method = gr.Radio([("Build-A-Scene (blending + DSA)", "bas"), ("MasaCtrl mutual attention", "masactrl"),
                               ("Latent blending only", "blend")], value="bas", label="Stage method",
                              info="How a new stage keeps the earlier objects: the paper's method or a baseline.")
            with gr.Accordion("Advanced (published defaults)", open=False):
                blend = gr.Slider(0, 1, value=0.95, step=0.05,
                                  label="Blended fraction of steps (published 0.9; embedded model 0.95)",
                                  info="For this share of the steps, everything outside the edited box is copied "
                                       "from the previous stage (latent blending).")
                dsa_start = gr.Slider(0, 1, value=0.5, step=0.05, label="DSA from this fraction of the steps",
                                      info="Dynamic Self-Attention: from here on, the new object also looks at "
                                           "the previous stage's objects, so it fits in with them.")
                masking = gr.Radio([("multiplicative (published)", "multiply"), ("−inf (ablation)", "neg_inf")],
                                   value="multiply", label="DSA key/value masking",
                                   info="How DSA hides the parts of the previous stage the new object may not copy.")
            with gr.Row():
                gen_btn = gr.Button("Generate", variant="primary", elem_id="l3d-generate")
                next_btn = gr.Button("Next stage", variant="secondary", elem_id="l3d-next")
                stop_btn = gr.Button("Stop", variant="stop", elem_id="l3d-stop")
            preview = gr.Image(label="Step preview (x̂0: the model's current guess of the final picture)",
                               type="numpy", height=120, interactive=False, elem_id="l3d-preview")
        with gr.Column(scale=5):
            image = gr.Image(label="Scene", type="numpy", height=VIEW + 20, interactive=False, elem_id="l3d-image")
            show_masks = gr.Checkbox(False, label="Overlay object masks", elem_id="l3d-masks",
                                     info="Tint each object's mask, as it was created, in its box colour over the scene.")
            status = gr.Markdown(elem_id="l3d-status")
            history = gr.Gallery(label="Stage history (select one, then go back to it)", columns=6, height=170,
                                 allow_preview=False, format="png", elem_id="l3d-history")
            with gr.Row():
                back_idx = gr.Number(-1, precision=0, visible=False, elem_id="l3d-back-idx")
                back_btn = gr.Button("Go back to the selected stage", elem_id="l3d-back")
            with gr.Group(visible=False, elem_id="l3d-back-confirm") as confirm_box:
                confirm_md = gr.Markdown(elem_id="l3d-back-question")
                with gr.Row():
                    confirm_btn = gr.Button("Discard them and go back", variant="stop", elem_id="l3d-back-yes")
                    cancel_btn = gr.Button("Keep them", elem_id="l3d-back-no")
            files = gr.File(label="Downloads: image, 16-bit depth, layout, stages", file_count="multiple",
                            elem_id="l3d-files")
            summary = gr.JSON(label="Stages (JSON)", elem_id="l3d-summary")

    # -- layout editing (cheap; its own queue so it never waits behind generation) ----------
    def on_layout(text):
        try:
            layout = Layout.from_json(text)
        except InputError as e:
            return gr.update(), gr.update(), f"⚠️ {e}", gr.update()
        d = preview_depth(layout, 240)
        msg = f"{len(layout.boxes)} box(es) · valid layout"
        return layout_rows(layout), d, msg, layout.scene_prompt

    @user_errors
    def on_table(rows, scene):
        return layout_text(rows_to_layout_dict(rows, scene))

    @user_errors
    def on_scene(scene, text):
        """The chosen scene written into the layout JSON; JSON that is broken stays as typed, to be fixed."""
        try:
            data = jsontext.loads(text) if (text or "").strip() else {"boxes": []}
        except json.JSONDecodeError:
            data = None
        if not isinstance(data, dict):
            raise InputError("The layout JSON is not a valid layout (a JSON object with 'scene_prompt' and "
                             "'boxes'); fix it, then choose the scene again.")
        data["scene_prompt"] = scene
        return layout_text(data)

    @user_errors
    def on_load(file):
        if file is None:
            raise InputError("Choose a layout JSON file.")
        try:
            text = Path(file).read_text()
        except (OSError, UnicodeDecodeError):
            raise InputError("That file is not a readable text file.") from None
        return layout_text(Layout.from_json(text).to_dict())

    # -- generation ---------------------------------------------------------------------------
    def _request(text, model_v, seed_v, steps_v, guidance_v, method_v, blend_v, dsa_v, masking_v):
        from backends.layout3d.service import SceneRequest

        return SceneRequest(Layout.from_json(text), model=model_v, seed=int(seed_v or 0), num_inference_steps=int(steps_v),
                            guidance_scale=float(guidance_v), method=method_v, blend_fraction=float(blend_v),
                            dsa_start_fraction=float(dsa_v), dsa_masking=masking_v)

    def _stream(work, request, masks_v, progress, layout_too: bool = False,
                stopped: str = "Stopped by the user; the stages finished before are kept."):
        token = CANCELS.start(request, "layout3d")
        more = (gr.update(),) if layout_too else ()
        try:
            for kind, item in stream(work(token), progress):
                if kind == "preview":
                    yield enlarge(item, 120), *(gr.update(),) * 5, *more
                else:
                    scenes().put(_key(request), item.session)
                    shown = show_scene(item.session, masks_v, item.seconds, item.vocabulary_warning)
                    layout = (layout_text(item.last.layout.to_dict()),) if layout_too else ()
                    yield gr.update(), *shown, *layout
        except Cancelled:
            yield gr.update(), gr.update(), gr.update(), stopped, gr.update(), gr.update(), *more
        finally:
            CANCELS.finish(request, "layout3d", token)

    @user_errors
    def on_generate(text, model_v, seed_v, steps_v, guidance_v, method_v, blend_v, dsa_v, masking_v, masks_v,
                    request: gr.Request, progress=gr.Progress()):
        from backends.layout3d.service import start_scene

        req = _request(text, model_v, seed_v, steps_v, guidance_v, method_v, blend_v, dsa_v, masking_v)
        req.validate()
        # a stopped Generate keeps no part of the new scene: the scene from before (if any) stays current
        yield from _stream(lambda tok: start_scene(req, tok), request, masks_v, progress,
                           stopped="Stopped by the user before the new scene was finished; the scene you had before "
                                   "(if any) is unchanged.")

    @user_errors
    def on_next(text, masks_v, request: gr.Request, progress=gr.Progress()):
        from backends.layout3d.service import edit_scene

        session = scenes().get(_key(request))  # an expired scene raises a message saying so
        if session is None or not session.stages:
            raise InputError("Generate a scene first; the next stage builds on it.")
        layout = Layout.from_json(text)
        yield from _stream(lambda tok: edit_scene(session, layout, tok), request, masks_v, progress)

    @user_errors
    def on_rebuild(file, masks_v, request: gr.Request, progress=gr.Progress()):
        from backends.layout3d.service import read_card, replay_scene

        if file is None:
            raise InputError("Choose a stages.json (the download of a scene).")
        try:
            card = jsontext.loads(Path(file).read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            raise InputError("That file is not a readable stages.json.") from None
        read_card(card)  # a clear message before any work
        yield from _stream(lambda tok: replay_scene(card, tok), request, masks_v, progress, layout_too=True)

    def on_select(evt: gr.SelectData):
        return evt.index

    @user_errors
    def on_back_ask(idx, request: gr.Request):
        """Going back discards the later stages: say which, and ask first."""
        session = scenes().get(_key(request))
        if session is None or not session.stages:
            raise InputError("There is no scene yet.")
        if idx is None or not 0 <= int(idx) < len(session.stages):
            raise InputError("Select a stage in the history first.")
        later = len(session.stages) - 1 - int(idx)
        if later == 0:
            raise InputError(f"Stage {int(idx)} is already the last stage.")
        question = (f"Going back to stage {int(idx)} discards the {later} later stage(s) "
                    f"({int(idx) + 1}–{len(session.stages) - 1}). Download stages.json first to keep them "
                    "(Rebuild from stages.json brings them back). Discard them?")
        return gr.update(visible=True), question

    @user_errors
    def on_back(idx, masks_v, request: gr.Request):
        session = scenes().get(_key(request))
        if session is None or not session.stages:
            raise InputError("There is no scene yet.")
        if idx is None or int(idx) < 0:
            raise InputError("Select a stage in the history first.")
        stage = session.go_back(int(idx))
        scenes().put(_key(request), session)
        return layout_text(stage.layout.to_dict()), *show_scene(session, masks_v, None), gr.update(visible=False)

    @user_errors
    def on_masks(masks_v, request: gr.Request):
        session = scenes().get(_key(request))
        if session is None or not session.stages:
            return gr.update()
        last = session.last
        return enlarge(overlay_masks(last, session.stages) if masks_v else last.image)

    def on_stop(request: gr.Request) -> str:
        return "Stopping…" if CANCELS.cancel(request, "layout3d") else "Nothing is running."

    def on_unload(request: gr.Request):
        if _STORE is not None:
            _STORE.drop(_key(request))

    outs = [preview, image, history, status, summary, files]
    layout_json.change(on_layout, inputs=layout_json, outputs=[table, depth, layout_status, scene_prompt],
                       api_name="layout3d_depth", concurrency_id="layout3d-edit", concurrency_limit=4,
                       show_progress="hidden")
    # Unknown words are flagged as the prompts are typed (editor, table or JSON): a tokenizer-file check,
    # no model, on the light queue, so nobody waits for a generation to learn the model lacks a word.
    layout_json.change(layout_words, inputs=[layout_json, model], outputs=words_md, api_name="layout3d_check_words",
                       concurrency_id="layout3d-edit", show_progress="hidden")
    model.change(layout_words, inputs=[layout_json, model], outputs=words_md, api_visibility="private",
                 concurrency_id="layout3d-edit", show_progress="hidden")
    gr.api(user_errors(add_box_text), api_name="layout3d_add_box", concurrency_id="layout3d-edit")
    # Progress and an error show on a status line only, the error as a note there: a bad input must not
    # badge the layout, the scene, its history and its downloads with "Error" (they stay as they were).
    listen(table.input, on_table, status=layout_status, inputs=[table, scene_prompt], outputs=layout_json,
           api_name="layout3d_table", concurrency_id="layout3d-edit")
    listen(scene_prompt.input, on_scene, status=layout_status, inputs=[scene_prompt, layout_json],
           outputs=layout_json, api_name="layout3d_scene", concurrency_id="layout3d-edit")
    listen(load_btn.upload, on_load, status=layout_status, inputs=load_btn, outputs=layout_json,
           api_name="layout3d_load", concurrency_id="layout3d-edit")
    listen(gen_btn.click, on_generate, status=status,
           inputs=[layout_json, model, seed, steps, guidance, method, blend, dsa_start, masking, show_masks],
           outputs=outs, api_name="layout3d_generate", concurrency_id="gpu")
    listen(next_btn.click, on_next, status=status, inputs=[layout_json, show_masks], outputs=outs,
           api_name="layout3d_next_stage", concurrency_id="gpu")
    listen(rebuild_btn.upload, on_rebuild, status=status, inputs=[rebuild_btn, show_masks],
           outputs=[*outs, layout_json], api_name="layout3d_rebuild", concurrency_id="gpu")
    history.select(on_select, outputs=back_idx, api_visibility="private", queue=False)
    listen(back_btn.click, on_back_ask, status=status, inputs=back_idx, outputs=[confirm_box, confirm_md],
           api_visibility="private", concurrency_id="layout3d-edit")
    listen(confirm_btn.click, on_back, status=status, inputs=[back_idx, show_masks],
           outputs=[layout_json, image, history, status, summary, files, confirm_box],
           api_name="layout3d_go_back", concurrency_id="layout3d-edit")
    cancel_btn.click(lambda: gr.update(visible=False), outputs=confirm_box, api_visibility="private", queue=False)
    show_masks.change(on_masks, inputs=show_masks, outputs=image, api_name="layout3d_masks",
                      concurrency_id="layout3d-edit", show_progress="hidden")
    stop_btn.click(on_stop, outputs=status, api_name="layout3d_stop", queue=False)
    demo.load(on_layout, inputs=layout_json, outputs=[table, depth, layout_status, scene_prompt],
              api_visibility="private")
    demo.load(warm_up, api_visibility="private", queue=False)
    demo.unload(on_unload)


TAB = TabSpec(name="layout3d", title="3D Layout", build=build)
