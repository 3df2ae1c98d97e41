"""3D Layout tab (Build-A-Scene): place 3D boxes, generate, then insert / change / move objects stage by stage."""

from __future__ import annotations

import html
import json
import uuid
from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from app.components.action_button import bind_action
from app.components.downloads import new_output_dir
from app.components.errors import user_errors
from app.components.failures import listen
from app.components.model_download import download_beside
from app.components.warmup import warm_up_in_background
from app.tabs import TabSpec
from backends.common.errors import InputError
from backends.layout3d.actions import SCENE
from backends.layout3d.layout import MAX_BOXES, Layout, preview_depth
from backends.layout3d.models import DEFAULT_MODEL, MODEL_CHOICES, MODEL_PARTS
from backends.layout3d.outputs import enlarge, history_items, last_stage_files, scene_picture
from backends.layout3d.requests import SceneRequest
from backends.layout3d.uploads import layout_from_rows, read_layout_file, read_scene_card, with_scene_prompt
from backends.synth.scene import COLORS, ROOMS

STATIC = Path(__file__).resolve().parents[1] / "static"
VIEW = 320  # generated images are shown enlarged to this size
COLUMNS = ["prompt", "x", "y", "z", "w", "d", "h", "yaw"]

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
def scenes():
    """The server's scenes, by the key this browser session keeps (torch loads on first use, never at build)."""
    from backends.layout3d.sessions import live_scenes

    return live_scenes()


def drop_scene(key: str | None) -> None:
    """The browser session is gone (its state deleted): its scene's tensors go too."""
    if key:
        scenes().drop(key)


def current_scene(key: str | None, missing: str = "Generate a scene first; the next stage builds on it."):
    """This session's scene (an expired one raises a message saying so)."""
    session = scenes().get(key) if key else None
    if session is None or not session.stages:
        raise InputError(missing)
    return session


def warm_up() -> None:
    """Load the model (and torch, open3d) when the page opens, so the first Generate does not wait for it."""

    def work():
        from backends.layout3d.service import warm_up

        warm_up(DEFAULT_MODEL)

    warm_up_in_background("layout3d", work)


# --- conversions ---------------------------------------------------------------------------
def layout_text(data: dict) -> str:
    """Layout JSON with one line per box (short enough to read and edit in the textbox)."""
    boxes = ",\n  ".join(json.dumps(b) for b in data.get("boxes", []))
    return "{\"scene_prompt\": " + json.dumps(data.get("scene_prompt", "")) + ",\n \"boxes\": [\n  " + boxes + "\n ]}"


def layout_rows(layout: Layout) -> list[list]:
    return [[b.prompt, *[round(v, 3) for v in b.center], *[round(v, 3) for v in b.size], round(b.yaw_deg, 1)]
            for b in layout.boxes]


# --- the layout's light handlers (their own queue: they never wait behind a generation) -------
def on_layout(text):
    try:
        layout = Layout.from_json(text)
    except InputError as e:
        return gr.update(), gr.update(), f"⚠️ {e}", gr.update()
    return layout_rows(layout), preview_depth(layout, 240), f"{len(layout.boxes)} box(es) · valid layout", \
        layout.scene_prompt


@user_errors
def on_table(rows, scene):
    return layout_text(layout_from_rows(rows, scene))


@user_errors
def on_scene(scene, text):
    """The chosen scene written into the layout JSON; JSON that is broken stays as typed, to be fixed."""
    return layout_text(with_scene_prompt(text, scene))


@user_errors
def on_load(file):
    return layout_text(read_layout_file(file).to_dict())


# --- the scene action: requests in, the result shown --------------------------------------------
def generate_request(text, model_v, seed_v, steps_v, guidance_v, method_v, blend_v, dsa_v, masking_v, _masks, key):
    """Generate: a new scene (kept under this session's key; a stopped Generate leaves the old one)."""
    return SceneRequest(Layout.from_json(text), model=model_v, seed=int(seed_v or 0), num_inference_steps=int(steps_v),
                        guidance_scale=float(guidance_v), method=method_v, blend_fraction=float(blend_v),
                        dsa_start_fraction=float(dsa_v), dsa_masking=masking_v, scene_key=key or uuid.uuid4().hex)


def next_request(text, _masks, key):
    """Next stage: this session's scene (its settings and every stage's layout) and the new layout."""
    from backends.layout3d.service import scene_request

    return scene_request(current_scene(key), Layout.from_json(text), key)


def rebuild_request(file, _masks, key):
    """Rebuild: the request of an uploaded run card, as this session's scene."""
    request = read_scene_card(file)
    request.scene_key = key or uuid.uuid4().hex
    return request


def show_scene(request, result, paths, inputs=()):
    """Keep the scene for the next stage; show its last stage (its masks overlaid when the input before the
    scene key asks: the API's ``show_masks``), its history and its files (the backend's)."""
    scenes().put(request.scene_key, result.session)
    stages, last = result.stages, result.last
    status = (f"**Stage {last.index}: {last.action}** · made by `{result.model}` on `{result.device}`"
              f"{f' · {result.seconds:.1f} s' if result.new else ''} · {len(stages)} stage(s) in the history")
    if result.vocabulary_warning:
        status += f"\n\n⚠️ {result.vocabulary_warning}"
    files = [str(p) for p in last_stage_files(stages, paths)]
    masks = bool(inputs[-2]) if len(inputs) >= 2 else False
    return status, scene_picture(stages, masks, VIEW), history_items(stages), result.summary, files, request.scene_key


def show_rebuilt(request, result, paths, inputs=()):
    return *show_scene(request, result, paths, inputs), layout_text(result.last.layout.to_dict())


# --- history: go back, masks ---------------------------------------------------------------
def on_select(evt: gr.SelectData):
    return evt.index


@user_errors
def on_back_ask(idx, key):
    """Going back discards the later stages: say which, and ask first."""
    session = current_scene(key, "There is no scene yet.")
    if idx is None or not 0 <= int(idx) < len(session.stages):
        raise InputError("Select a stage in the history first.")
    later = len(session.stages) - 1 - int(idx)
    if later == 0:
        raise InputError(f"Stage {int(idx)} is already the last stage.")
    first, last = int(idx) + 1, len(session.stages) - 1
    which, it = (f"the later stage {first}", "it") if later == 1 else (f"the {later} later stages ({first}–{last})", "them")
    question = (f"Going back to stage {int(idx)} discards {which}. Download run.json first to keep {it} "
                f"(Rebuild from run.json brings {it} back). Discard {it}?")
    return gr.update(visible=True), question


@user_errors
def on_back(idx, masks_v, key):
    """The scene as it was at the selected stage, its files and run card written again (the backend's)."""
    from backends.layout3d.service import scene_request, scene_result

    session = current_scene(key, "There is no scene yet.")
    if idx is None or int(idx) < 0:
        raise InputError("Select a stage in the history first.")
    stage = session.go_back(int(idx))
    request, result = scene_request(session, scene_key=key), scene_result(session)
    paths = SCENE.write_run(request, result, new_output_dir("layout3d"))
    status, _, gallery, summary, files, _ = show_scene(request, result, paths)
    return (layout_text(stage.layout.to_dict()), scene_picture(session.stages, masks_v, VIEW), gallery, status,
            summary, files, gr.update(visible=False))


@user_errors
def on_masks(masks_v, key):
    session = scenes().get(key) if key else None
    if session is None or not session.stages:
        return gr.update()
    return scene_picture(session.stages, masks_v, VIEW)


# --- layout ----------------------------------------------------------------------------------
INTRO = (
    "**Build-A-Scene** (ICLR 2025): place 3D boxes with prompts, generate, then — stage by stage — insert, "
    "re-prompt, move, resize, rotate or delete boxes while every earlier object stays as it was (latent "
    "blending + Dynamic Self-Attention; moves warp the object by its 3D box and re-invert it). The embedded "
    "model is a 64×64 box-depth-conditioned diffusion model trained here on the project's primitive world: "
    "it knows colours (red, orange, yellow, green, cyan, blue, purple, pink), shapes (cube, sphere, "
    "cylinder, cone, torus) and six rooms."
)


def layout_column(ui: SimpleNamespace) -> None:
    gr.HTML(EDITOR_HTML, html_template="${value}", css_template=EDITOR_CSS, js_on_load=_editor_js(),
            elem_id="l3d-editor", apply_default_css=False, server_functions=[editor_add_box, editor_prompt_words])
    ui.words_md = gr.Markdown(elem_id="l3d-words")  # unknown words of the layout's prompts, as typed
    ui.scene_prompt = gr.Dropdown([r.prompt for r in ROOMS], value=DEFAULT_LAYOUT["scene_prompt"],
                                  allow_custom_value=True, label="Scene (the empty-scene prompt)", elem_id="l3d-scene",
                                  info="The empty scene the boxes stand in: one of the six rooms the embedded model knows.")
    ui.table = gr.Dataframe(headers=COLUMNS, datatype=["str"] + ["number"] * 7, column_count=8, interactive=True,
                            label=f"Boxes (metres, z up; ≤ {MAX_BOXES})", elem_id="l3d-table")
    with gr.Accordion("Layout JSON (edit, paste, load)", open=True):
        ui.layout_json = gr.Textbox(layout_text(DEFAULT_LAYOUT), lines=4, max_lines=10, label="Layout JSON",
                                    elem_id="l3d-json",
                                    info="The layout as text: edit, paste or load it; the editor, table and depth follow it.")
        with gr.Row():
            ui.load_btn = gr.UploadButton("Load layout JSON", file_types=[".json"], elem_id="l3d-load")
            ui.rebuild_btn = gr.UploadButton("Rebuild from run.json", file_types=[".json"], elem_id="l3d-rebuild")


def settings_column(ui: SimpleNamespace) -> None:
    ui.depth = gr.Image(label="Box depth (the condition; near = bright)", type="numpy", height=240,
                        interactive=False, elem_id="l3d-depth")
    ui.layout_status = gr.Markdown(elem_id="l3d-layout-status")
    with gr.Row():
        ui.model = gr.Dropdown(list(MODEL_CHOICES), value=DEFAULT_MODEL, label="Model", elem_id="l3d-model",
                               info="Embedded: the small model trained here; sd15 (+ LooseControl): the paper's stack once downloaded.")
        ui.seed = gr.Number(0, precision=0, minimum=0, label="Seed", elem_id="l3d-seed",
                            info="Same seed, same layout, same settings → the same pictures.")
    download_beside(ui.model, "l3d", parts=MODEL_PARTS)
    with gr.Row():
        ui.steps = gr.Slider(2, 50, value=20, step=1, label="DDIM steps (paper: 20)", elem_id="l3d-steps",
                             info="How many denoising steps make each picture: fewer is faster, rougher.")
        ui.guidance = gr.Slider(0, 15, value=5.0, step=0.5, label="CFG (embedded 5; SD 7.5)",
                                info="Classifier-free guidance: how strongly the picture follows the prompt.")
    ui.method = gr.Radio([("Build-A-Scene (blending + DSA)", "bas"), ("MasaCtrl mutual attention", "masactrl"),
                          ("Latent blending only", "blend")], value="bas", label="Stage method",
                         info="How a new stage keeps the earlier objects: the paper's method or a baseline.")
    with gr.Accordion("Advanced (published defaults)", open=False):
        ui.blend = gr.Slider(0, 1, value=0.95, step=0.05,
                             label="Blended fraction of steps (published 0.9; embedded model 0.95)",
                             info="For this share of the steps, everything outside the edited box is copied "
                                  "from the previous stage (latent blending).")
        ui.dsa_start = gr.Slider(0, 1, value=0.5, step=0.05, label="DSA from this fraction of the steps",
                                 info="Dynamic Self-Attention: from here on, the new object also looks at "
                                      "the previous stage's objects, so it fits in with them.")
        ui.masking = gr.Radio([("multiplicative (published)", "multiply"), ("−inf (ablation)", "neg_inf")],
                              value="multiply", label="DSA key/value masking",
                              info="How DSA hides the parts of the previous stage the new object may not copy.")
    with gr.Row():
        ui.gen_btn = gr.Button("Generate", variant="primary", elem_id="l3d-generate")
        ui.next_btn = gr.Button("Next stage", variant="secondary", elem_id="l3d-next")
        ui.stop_btn = gr.Button("Stop", variant="stop", elem_id="l3d-stop")
    ui.preview = gr.Image(label="Step preview (x̂0: the model's current guess of the final picture)",
                          type="numpy", height=120, interactive=False, elem_id="l3d-preview")


def scene_column(ui: SimpleNamespace) -> None:
    ui.image = gr.Image(label="Scene", type="numpy", height=VIEW + 20, interactive=False, elem_id="l3d-image")
    ui.show_masks = gr.Checkbox(False, label="Overlay object masks", elem_id="l3d-masks",
                                info="Tint each object's mask, as it was created, in its box colour over the scene.")
    ui.status = gr.Markdown(elem_id="l3d-status")
    ui.history = gr.Gallery(label="Stage history (select one, then go back to it)", columns=6, height=170,
                            allow_preview=False, format="png", elem_id="l3d-history")
    with gr.Row():
        ui.back_idx = gr.Number(-1, precision=0, visible=False, elem_id="l3d-back-idx")
        ui.back_btn = gr.Button("Go back to the selected stage", elem_id="l3d-back")
    # the id sits on a column: a Group shown after it was hidden renders its id twice (outer and inner div)
    with gr.Column(visible=False, elem_id="l3d-back-confirm") as ui.confirm_box, gr.Group():
        ui.confirm_md = gr.Markdown(elem_id="l3d-back-question")
        with gr.Row():
            ui.confirm_btn = gr.Button("Discard and go back", variant="stop", elem_id="l3d-back-yes")
            ui.cancel_btn = gr.Button("Keep", elem_id="l3d-back-no")
    ui.files = gr.File(label="Downloads: image, 16-bit depth, layout, run card", file_count="multiple",
                       elem_id="l3d-files")
    ui.summary = gr.JSON(label="Stages (JSON)", elem_id="l3d-summary")


# --- wiring ----------------------------------------------------------------------------------
def wire_layout(demo: gr.Blocks, ui: SimpleNamespace) -> None:
    light = {"concurrency_id": "layout3d-edit"}
    depth_outs = [ui.table, ui.depth, ui.layout_status, ui.scene_prompt]
    ui.layout_json.change(on_layout, inputs=ui.layout_json, outputs=depth_outs, api_name="layout3d_depth",
                          concurrency_limit=4, show_progress="hidden", **light)
    # Unknown words are flagged as the prompts are typed (editor, table or JSON): a tokenizer-file check,
    # no model, on the light queue, so nobody waits for a generation to learn the model lacks a word.
    ui.layout_json.change(layout_words, inputs=[ui.layout_json, ui.model], outputs=ui.words_md,
                          api_name="layout3d_check_words", show_progress="hidden", **light)
    ui.model.change(layout_words, inputs=[ui.layout_json, ui.model], outputs=ui.words_md, api_visibility="private",
                    show_progress="hidden", **light)
    gr.api(user_errors(add_box_text), api_name="layout3d_add_box", **light)
    # Progress and an error show on a status line only, the error as a note there: a bad input must not
    # badge the layout, the scene, its history and its downloads with "Error" (they stay as they were).
    listen(ui.table.input, on_table, status=ui.layout_status, inputs=[ui.table, ui.scene_prompt],
           outputs=ui.layout_json, api_name="layout3d_table", **light)
    listen(ui.scene_prompt.input, on_scene, status=ui.layout_status, inputs=[ui.scene_prompt, ui.layout_json],
           outputs=ui.layout_json, api_name="layout3d_scene", **light)
    listen(ui.load_btn.upload, on_load, status=ui.layout_status, inputs=ui.load_btn, outputs=ui.layout_json,
           api_name="layout3d_load", **light)
    demo.load(on_layout, inputs=ui.layout_json, outputs=depth_outs, api_visibility="private")


def wire_scene(ui: SimpleNamespace) -> None:
    """Generate, Next stage and Rebuild run the one scene action (one Stop for all three); each shows the
    masks overlaid when the checkbox (the API's ``show_masks``) asks."""
    common = {"status": ui.status, "preview": ui.preview, "to_preview": lambda x0: enlarge(x0, 120)}
    outs = [ui.preview, ui.image, ui.history, ui.status, ui.summary, ui.files, ui.scene_key]  # the API's order
    settings = [ui.model, ui.seed, ui.steps, ui.guidance, ui.method, ui.blend, ui.dsa_start, ui.masking]
    bind_action(SCENE, trigger=ui.gen_btn.click, stop=ui.stop_btn, api_name="layout3d_generate",
                inputs=[ui.layout_json, *settings, ui.show_masks, ui.scene_key], outputs=outs,
                to_request=generate_request, show=show_scene, running="Generating the scene…",
                stopped="Stopped by the user before the new scene was finished; the scene you had before "
                        "(if any) is unchanged.", **common)
    bind_action(SCENE, trigger=ui.next_btn.click, api_name="layout3d_next_stage",
                inputs=[ui.layout_json, ui.show_masks, ui.scene_key], outputs=outs,
                to_request=next_request, show=show_scene, running="Running the next stage…",
                stopped="Stopped by the user; the scene is as it was before this stage.", **common)
    bind_action(SCENE, trigger=ui.rebuild_btn.upload, api_name="layout3d_rebuild",
                inputs=[ui.rebuild_btn, ui.show_masks, ui.scene_key], outputs=[*outs, ui.layout_json],
                to_request=rebuild_request, show=show_rebuilt, running="Rebuilding the scene…",
                stopped="Stopped by the user; the scene you had before (if any) is unchanged.", **common)


def wire_history(ui: SimpleNamespace) -> None:
    light = {"concurrency_id": "layout3d-edit"}
    ui.history.select(on_select, outputs=ui.back_idx, api_visibility="private", queue=False)
    listen(ui.back_btn.click, on_back_ask, status=ui.status, inputs=[ui.back_idx, ui.scene_key],
           outputs=[ui.confirm_box, ui.confirm_md], api_visibility="private", **light)
    back = listen(ui.confirm_btn.click, on_back, status=ui.status, inputs=[ui.back_idx, ui.show_masks, ui.scene_key],
                  outputs=[ui.layout_json, ui.image, ui.history, ui.status, ui.summary, ui.files, ui.confirm_box],
                  api_name="layout3d_go_back", **light)
    # the step preview showed a discarded stage's last step: cleared, so nothing on the page is from them
    back.success(lambda: None, outputs=ui.preview, queue=False, show_progress="hidden", api_visibility="private")
    ui.cancel_btn.click(lambda: gr.update(visible=False), outputs=ui.confirm_box, api_visibility="private",
                        queue=False)
    ui.show_masks.change(on_masks, inputs=[ui.show_masks, ui.scene_key], outputs=ui.image, api_name="layout3d_masks",
                         show_progress="hidden", **light)


def build(demo: gr.Blocks) -> None:
    gr.set_static_paths([STATIC])
    gr.Markdown(INTRO)
    ui = SimpleNamespace()
    ui.scene_key = gr.State(None, delete_callback=drop_scene)  # the key of this session's scene in the store
    with gr.Row():
        with gr.Column(scale=5):
            layout_column(ui)
        with gr.Column(scale=4):
            settings_column(ui)
        with gr.Column(scale=5):
            scene_column(ui)
    wire_layout(demo, ui)
    wire_scene(ui)
    wire_history(ui)
    demo.load(warm_up, api_visibility="private", queue=False)


TAB = TabSpec(name="layout3d", title="3D Layout", build=build)
