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
from app.components.params import control, documented
from app.components.warmup import warm_up_in_background
from app.tabs import TabSpec
from backends.common.errors import InputError
from backends.layout3d.actions import SCENE
from backends.layout3d.layout import MAX_BOXES, Layout, preview_depth
from backends.layout3d.models import DEFAULT_MODEL, MODEL_DEFAULTS, MODEL_PARTS
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
@documented(SceneRequest)
def add_box_text(layout: str, prompt: str) -> str:
    """The layout JSON with one more box standing in free floor space (``layout.add_box``).

    Args:
        prompt: What goes in the new box (e.g. 'a green cone'); the box takes the colour it names.
    """
    from backends.layout3d.layout import add_box

    return layout_text(add_box(Layout.from_json(layout), prompt).to_dict())


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


@documented(SceneRequest)
def layout_words(layout: str, model: str) -> str:
    """The words of the layout's prompts that the model does not know (a warning line), or nothing.

    No model runs: the model's tokenizer file is read. A layout that does not parse says nothing here (the layout
    status says what is wrong).
    """
    from backends.layout3d.vocabulary import vocabulary_check

    try:
        parsed = Layout.from_json(layout)
    except InputError:
        return ""
    message = vocabulary_check(model or DEFAULT_MODEL, parsed).message()
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
@documented(SceneRequest)
def on_layout(layout):
    """The layout checked and previewed, no model: its box table, its box depth (the condition; near = bright),
    a status line ('N box(es) · valid layout', or what is wrong, the rest unchanged) and its scene prompt."""
    try:
        parsed = Layout.from_json(layout)
    except InputError as e:
        return gr.update(), gr.update(), f"⚠️ {e}", gr.update()
    return layout_rows(parsed), preview_depth(parsed, 240), f"{len(parsed.boxes)} box(es) · valid layout", \
        parsed.scene_prompt


@user_errors
@documented(SceneRequest)
def on_table(boxes, scene_prompt):
    """The layout JSON of the box table and the scene.

    Args:
        boxes: The box table: per box its prompt, x y z (centre) and w d h (size) in metres (z up), yaw in degrees.
        scene_prompt: The empty scene the boxes stand in (one of the rooms the embedded model knows).
    """
    return layout_text(layout_from_rows(boxes, scene_prompt))


@user_errors
@documented(SceneRequest)
def on_scene(scene_prompt, layout):
    """The chosen scene written into the layout JSON; JSON that is broken stays as typed, to be fixed.

    Args:
        scene_prompt: The empty scene the boxes stand in (one of the rooms the embedded model knows).
    """
    return layout_text(with_scene_prompt(layout, scene_prompt))


@user_errors
@documented(SceneRequest)
def on_load(layout_file):
    """The layout JSON of an uploaded file, checked and laid out one box per line.

    Args:
        layout_file: A layout JSON file (scene_prompt and boxes).
    """
    return layout_text(read_layout_file(layout_file).to_dict())


# --- the scene action: requests in, the result shown --------------------------------------------
def generate_request(layout, model, seed, num_inference_steps, guidance_scale, method, blend_fraction,
                     dsa_start_fraction, dsa_masking, show_masks, scene_key):
    """Generate: a new scene (kept under this session's key; a stopped Generate leaves the old one).

    Args:
        show_masks: Tint each object's mask, as it was created, in its box colour over the scene picture.
        scene_key: This browser session's scene on the server (kept by the page; not part of the API).
    """
    return SceneRequest(Layout.from_json(layout), model=model, seed=0 if seed is None else seed,
                        num_inference_steps=num_inference_steps, guidance_scale=guidance_scale, method=method,
                        blend_fraction=blend_fraction, dsa_start_fraction=dsa_start_fraction, dsa_masking=dsa_masking,
                        scene_key=scene_key or uuid.uuid4().hex)


def next_request(layout, show_masks, scene_key):
    """Next stage: this session's scene (its settings and every stage's layout) and the new layout.

    Args:
        show_masks: Tint each object's mask, as it was created, in its box colour over the scene picture.
        scene_key: This browser session's scene on the server (kept by the page; not part of the API).
    """
    from backends.layout3d.service import scene_request

    return scene_request(current_scene(scene_key), Layout.from_json(layout), scene_key)


def rebuild_request(run_card, show_masks, scene_key):
    """Rebuild: the request of an uploaded run card, as this session's scene.

    Args:
        run_card: A scene's run.json (the download of any stage; an older stages.json too).
        show_masks: Tint each object's mask, as it was created, in its box colour over the scene picture.
        scene_key: This browser session's scene on the server (kept by the page; not part of the API).
    """
    request = read_scene_card(run_card)
    request.scene_key = scene_key or uuid.uuid4().hex
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
@documented(SceneRequest)
def on_back(stage, show_masks, scene_key):
    """The scene as it was at a stage, the later stages discarded; its files and run card written again.

    Args:
        stage: The stage to go back to (0 is the empty scene), as the history numbers them.
        show_masks: Tint each object's mask, as it was created, in its box colour over the scene picture.
        scene_key: This browser session's scene on the server (kept by the page; not part of the API).
    """
    from backends.layout3d.service import scene_request, scene_result

    session = current_scene(scene_key, "There is no scene yet.")
    if stage is None or int(stage) < 0:
        raise InputError("Select a stage in the history first.")
    kept = session.go_back(int(stage))
    request, result = scene_request(session, scene_key=scene_key), scene_result(session)
    paths = SCENE.write_run(request, result, new_output_dir("layout3d"))
    status, _, gallery, summary, files, _ = show_scene(request, result, paths)
    return (layout_text(kept.layout.to_dict()), scene_picture(session.stages, show_masks, VIEW), gallery, status,
            summary, files, gr.update(visible=False))


@user_errors
@documented(SceneRequest)
def on_masks(show_masks, scene_key):
    """This session's scene picture with its objects' masks overlaid, or plain (nothing when there is no scene).

    Args:
        show_masks: Tint each object's mask, as it was created, in its box colour over the scene picture.
        scene_key: This browser session's scene on the server (kept by the page; not part of the API).
    """
    session = scenes().get(scene_key) if scene_key else None
    if session is None or not session.stages:
        return gr.update()
    return scene_picture(session.stages, show_masks, VIEW)


# --- layout ----------------------------------------------------------------------------------
INTRO = (
    "**Build-A-Scene** (ICLR 2025): place 3D boxes with prompts, generate, then — stage by stage — insert, "
    "re-prompt, move, resize, rotate or delete boxes while every earlier object stays as it was (latent "
    "blending + Dynamic Self-Attention; moves warp the object by its 3D box and re-invert it). The embedded "
    "model is a 64×64 box-depth-conditioned diffusion model trained here on the project's primitive world: "
    "it knows colours (red, orange, yellow, green, cyan, blue, purple, pink), shapes (cube, sphere, "
    "cylinder, cone, torus) and six rooms."
)


# what the stage methods and DSA maskings are called on the page (the values are the request's choices)
METHOD_NAMES = {"bas": "Build-A-Scene (blending + DSA)", "masactrl": "MasaCtrl mutual attention",
                "blend": "Latent blending only"}
MASKING_NAMES = {"multiply": "multiplicative (published)", "neg_inf": "−inf (ablation)"}


def named_choices(component: gr.Radio, names: dict[str, str]) -> gr.Radio:
    """A control's choices (the request's values, in its order) shown by their names on the page."""
    component.choices = [(names.get(value, str(value)), value) for _, value in component.choices]
    return component


def model_defaults(model: str) -> tuple[float, float]:
    """The CFG and blended fraction the model uses when a request leaves them out (``models.MODEL_DEFAULTS``)."""
    defaults = MODEL_DEFAULTS.get(model, MODEL_DEFAULTS[DEFAULT_MODEL])
    return defaults.guidance_scale, defaults.blend_fraction


def show_model_defaults(ui: SimpleNamespace, model: str) -> None:
    """The CFG and blending sliders start at the model's own values: the request's default for them is "not given"
    (the model's own), which a slider cannot show; a change of model moves them to the new model's (``wire_layout``)."""
    ui.guidance.value, ui.blend.value = model_defaults(model)


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
        ui.model = control(SceneRequest, "model", elem_id="l3d-model")
        ui.seed = control(SceneRequest, "seed", widget="number", elem_id="l3d-seed")
    download_beside(ui.model, "l3d", parts=MODEL_PARTS)
    with gr.Row():
        ui.steps = control(SceneRequest, "num_inference_steps", elem_id="l3d-steps")
        ui.guidance = control(SceneRequest, "guidance_scale", elem_id="l3d-guidance")
    ui.method = named_choices(control(SceneRequest, "method", widget="radio", elem_id="l3d-method"), METHOD_NAMES)
    with gr.Accordion("Advanced (published defaults)", open=False):
        ui.blend = control(SceneRequest, "blend_fraction", elem_id="l3d-blend")
        ui.dsa_start = control(SceneRequest, "dsa_start_fraction", elem_id="l3d-dsa-start")
        ui.masking = named_choices(control(SceneRequest, "dsa_masking", widget="radio", elem_id="l3d-masking"),
                                   MASKING_NAMES)
    show_model_defaults(ui, DEFAULT_MODEL)
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
    ui.model.change(model_defaults, inputs=ui.model, outputs=[ui.guidance, ui.blend], api_visibility="private",
                    queue=False, show_progress="hidden")
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
