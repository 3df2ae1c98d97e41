"""Avatar tab (LIFe-GoM): a few views of a person → an animatable Gaussians-on-Mesh avatar, posed and
rendered live in the browser (Spark) and on the server (the compiled CPU tile renderer).

The long actions (reconstruct, fit photos, video) are the backend's actions (``backends.avatar.actions``)
bound to their buttons; what a session keeps between actions lives in ``backends.avatar.sessions``."""

from __future__ import annotations

import json
from pathlib import Path

import gradio as gr

from app.components.action_button import bind_action, bind_stop, current_session
from app.components.downloads import new_output_dir
from app.components.errors import user_errors
from app.components.failures import listen
from app.components.model_choices import model_choices as registered_choices
from app.tabs import TabSpec
from backends.avatar import sessions
from backends.avatar.actions import ACTIONS, FIT_PHOTOS, RECONSTRUCT, VIDEO
from backends.avatar.models import EMBEDDED_MODEL, PUBLISHED_MODEL
from backends.avatar.params import PRESETS, SLIDER_RANGES, Pose
from backends.common.errors import InputError

STATIC = Path(__file__).resolve().parents[1] / "static"
EMBEDDED, PUBLISHED = EMBEDDED_MODEL, PUBLISHED_MODEL
SLIDERS = {
    "yaw": "Turn (yaw)", "arm_raise_l": "Left arm raise", "arm_raise_r": "Right arm raise",
    "arm_forward_l": "Left arm forward", "arm_forward_r": "Right arm forward", "elbow_l": "Left elbow",
    "elbow_r": "Right elbow", "hip_l": "Left hip (forward)", "hip_r": "Right hip (forward)",
    "hip_out_l": "Left hip (out)", "hip_out_r": "Right hip (out)", "knee_l": "Left knee", "knee_r": "Right knee",
    "spine": "Bend forward", "head_turn": "Head turn",
}
RANGES = {name: (int(lo), int(hi)) for name, (lo, hi) in SLIDER_RANGES.items()}
NEUTRAL = Pose().as_dict()
PRESET_NAMES = list(PRESETS)

VIEWER_HTML = """
<div class="av-viewer" id="av-viewer-root">
  <div class="av-toolbar">
    <button data-show="gaussians" class="av-on">Gaussians</button><button data-show="mesh">Mesh</button>
    <button class="av-spin" title="orbit for 3 s, drawing every frame">Measure FPS</button>
    <span class="av-fps">– FPS</span>
  </div>
  <div class="av-canvas"></div>
  <div class="av-status"></div>
</div>
"""

VIEWER_CSS = """
.av-viewer { display: flex; flex-direction: column; gap: 4px; }
.av-toolbar { display: flex; gap: 4px; align-items: center; }
.av-toolbar button { padding: 2px 10px; border: 1px solid #bbb; border-radius: 4px; background: #fafafa; cursor: pointer; }
.av-toolbar button.av-on { background: #dbe8ff; border-color: #6b8fd6; }
.av-fps { margin-left: auto; font: 12px monospace; color: #333; }
.av-canvas { width: 100%; min-height: 300px; }
.av-canvas canvas { display: block; width: 100%; border-radius: 6px; touch-action: none; }
.av-status { font-size: 12px; color: #555; }
"""


def _viewer_js() -> str:
    url = f"/gradio_api/file={STATIC / 'avatar' / 'viewer.js'}"
    return f"""
    const start = () => {{
      const payload = document.querySelector('#av-payload textarea, #av-payload input');
      const bones = document.querySelector('#av-bones textarea, #av-bones input');
      if (!payload || !bones) {{ setTimeout(start, 200); return; }}
      import({json.dumps(url)}).then((m) => m.mount(element.querySelector('.av-viewer'), payload, bones))
        .catch((e) => {{ element.querySelector('.av-status').textContent = 'the 3D viewer failed to load: ' + e; }});
    }};
    start();
    """



def _session(request: gr.Request | None = None) -> str:
    """The browser session an event belongs to: the request's, or (inside a bound action's ``to_request``,
    ``show`` and ``stopped``) the one bind_action names."""
    if request is None:
        return current_session()
    return getattr(request, "session_hash", None) or "anonymous"


def _pose(values) -> Pose:
    return Pose(**{name: float(v) for name, v in zip(SLIDERS, values, strict=True)})


def default_model() -> str:
    from backends.avatar.models import default_model as chosen

    return chosen()


def model_choices() -> list[tuple[str, str]]:
    from backends.avatar.models import offered_models

    return registered_choices("avatar", ids=offered_models(), labels={
        EMBEDDED_MODEL: "Embedded (CPU-sized, trained here; 1–5 views)",
        PUBLISHED_MODEL: "LIFe-GoM published checkpoint (THuman2.0; exactly 3 views, SMPL-X)"})


def model_info() -> str:
    from backends.avatar.models import model_ready

    state = "present" if model_ready(EMBEDDED) else "**missing** (train it: `python -m training.avatar_reconstructor`)"
    published = ("present, so it is chosen by default (exactly 3 views at 1024²: minutes on a CPU; choose the "
                 "embedded model for 1–5 views or photos)") if model_ready(PUBLISHED) else \
        "not present (`iclr25-studio models check` says where to put it and SMPL-X)"
    return (f"**Model:** `{EMBEDDED}` ({state}); the authors' `{PUBLISHED}` checkpoint: {published} · "
            "**device:** CPU (torch) · **server renderer:** compiled tile "
            "renderer (numba; gsplat on CUDA) · **browser:** Spark splats, skinned on the GPU")


# --- layout ---------------------------------------------------------------------------------------

def _source_column(ui: dict) -> None:
    ui["source"] = gr.Radio([("Synthetic subject", "synthetic"), ("Photos of a person", "photos"),
                             ("Upload my views", "upload")], value="synthetic", label="Input", elem_id="av-source",
                            info="A held-out synthetic person; 1–5 photos of one person (the body, its mask and "
                                 "the cameras are found for you); or your own views with masks and cameras.")
    with gr.Group(visible=True) as ui["synth_box"], gr.Row():
        ui["subject"] = gr.Number(0, precision=0, minimum=0, maximum=999_999, label="Subject (held out)",
                                  elem_id="av-subject",
                                  info="Which held-out synthetic person (any number; none was seen in training).")
        ui["n_views"] = gr.Slider(1, 5, value=3, step=1, label="Views", elem_id="av-views",
                                  info="How many views of the person the model sees (sparse: 1–5).")
    with gr.Group(visible=False) as ui["photos_box"]:
        ui["photo_files"] = gr.File(file_count="multiple", file_types=["image"], elem_id="av-photos",
                                    label="Photos of one person (1–5; the whole body, head to feet, in each)")
        ui["fit_btn"] = gr.Button("Find the person and fit the body", elem_id="av-fit")
        ui["fit_gallery"] = gr.Gallery(label="Fit: MediaPipe's skeleton (green), the fitted body's joints (red), "
                                       "the person's mask (blue)", columns=5, height=200, allow_preview=True,
                                       elem_id="av-fit-gallery")
        ui["keep"] = gr.CheckboxGroup([], label="Photos to reconstruct from", elem_id="av-keep",
                                      info="Untick a photo whose fitted skeleton is wrong; the body is "
                                           "fitted again to the rest when you reconstruct.")
        ui["fit_md"] = gr.Markdown(elem_id="av-fit-status")
    with gr.Group(visible=False) as ui["upload_box"]:
        ui["up_images"] = gr.File(file_count="multiple", file_types=["image"], label="Images (1–5)",
                                  elem_id="av-up-images")
        ui["up_masks"] = gr.File(file_count="multiple", file_types=["image"], label="Masks (white = person)",
                                 elem_id="av-up-masks")
        ui["up_json"] = gr.File(file_types=[".json"], label="Cameras and pose (JSON; see the README)",
                                elem_id="av-up-json")
        ui["example_btn"] = gr.Button("Make an example upload (this subject's views)", size="sm",
                                      elem_id="av-example")
        ui["example_files"] = gr.File(label="Example upload", file_count="multiple", elem_id="av-example-files")
    ui["iterations"] = gr.Slider(1, 5, value=3, step=1, label="Feedback iterations (paper: 3)", elem_id="av-iters",
                                 info="Rounds of iterative feedback refining the avatar: more is sharper and slower.")
    ui["model"] = gr.Dropdown(model_choices(), value=default_model(), label="Reconstructor", elem_id="av-model",
                              info="The authors' published checkpoint is offered when it and your SMPL-X file "
                                   "are in the models folder (it takes 1024² inputs: minutes on a CPU).")
    with gr.Row():
        ui["recon_btn"] = gr.Button("Reconstruct", variant="primary", elem_id="av-reconstruct")
        ui["stop_btn"] = gr.Button("Stop", variant="stop", elem_id="av-stop")
    ui["inputs_gallery"] = gr.Gallery(label="What the model saw", columns=5, height=130, allow_preview=False,
                                      elem_id="av-inputs")
    ui["status"] = gr.Markdown(elem_id="av-status")


def _viewer_column(ui: dict) -> None:
    gr.HTML(VIEWER_HTML, html_template="${value}", css_template=VIEWER_CSS, js_on_load=_viewer_js(),
            elem_id="av-viewer", apply_default_css=False)
    ui["preset"] = gr.Dropdown(PRESET_NAMES, value="A-pose", label="Pose preset", elem_id="av-preset",
                               info="A ready pose; the sliders below then adjust it.")
    ui["sliders"] = []
    with gr.Accordion("Pose sliders (degrees)", open=True):
        names = list(SLIDERS)
        for i in range(0, len(names), 3):
            with gr.Row():
                for name in names[i:i + 3]:
                    lo, hi = RANGES[name]
                    ui["sliders"].append(gr.Slider(lo, hi, value=NEUTRAL[name], step=1, label=SLIDERS[name],
                                                   min_width=120, elem_id=f"av-pose-{name}",
                                                   info="Degrees; the avatar re-poses in the browser as you drag."))
    ui["payload"] = gr.Textbox(label="avatar data", elem_id="av-payload", elem_classes=["av-hidden"], max_lines=1)
    ui["bones"] = gr.Textbox(label="pose data", elem_id="av-bones", elem_classes=["av-hidden"], max_lines=1)


def _render_column(ui: dict) -> None:
    with gr.Row():
        ui["azimuth"] = gr.Slider(-180, 180, value=30, step=5, label="Camera azimuth (°)", elem_id="av-azimuth",
                                  info="Where the camera stands around the person for the rendered view.")
        ui["size"] = gr.Dropdown([256, 512, 1024], value=512, label="Size (px)", elem_id="av-size",
                                 info="Rendered image size in pixels; larger takes longer.")
    ui["render_btn"] = gr.Button("Render novel view (server)", elem_id="av-render")
    with gr.Row():
        ui["render_img"] = gr.Image(label="Render", type="numpy", interactive=False, height=260,
                                    elem_id="av-render-image")
        ui["truth_img"] = gr.Image(label="Ground truth (synthetic subjects)", type="numpy", interactive=False,
                                   height=260, elem_id="av-truth-image")
    ui["render_md"] = gr.Markdown(elem_id="av-render-status")
    with gr.Row():
        ui["video_kind"] = gr.Radio([("Turntable", "turntable"), ("Animation (presets)", "animation")],
                                    value="turntable", label="Video", elem_id="av-video-kind",
                                    info="Turntable: the camera circles the posed person; Animation: the avatar "
                                         "moves through the presets.")
        ui["frames"] = gr.Slider(8, 120, value=48, step=4, label="Frames", elem_id="av-frames",
                                 info="Frames in the video: more is smoother and takes longer.")
    ui["video_btn"] = gr.Button("Make video (H.264)", elem_id="av-video-btn")
    ui["video_out"] = gr.Video(label="Video", elem_id="av-video", height=260)
    ui["export_btn"] = gr.Button("Export (ply, mesh, avatar)", elem_id="av-export")
    ui["files"] = gr.File(label="Downloads: 3DGS .ply, posed mesh .obj/.ply, avatar.safetensors, run card "
                                "(run.json and its inputs)", file_count="multiple", elem_id="av-files")


def build(demo: gr.Blocks) -> None:
    gr.set_static_paths([STATIC])
    gr.Markdown(
        "**LIFe-GoM** (ICLR 2025): from 1–5 views of a person with cameras, one feed-forward pass with "
        "iterative feedback reconstructs an animatable **Gaussians-on-Mesh** avatar: a coarse body mesh "
        "(anny) refined by the network and its subdivision carrying one Gaussian per face. Pose it with the "
        "sliders — the browser re-poses the splats itself (skinning with the avatar's bones) — and render "
        "novel views and videos on the server. The embedded reconstructor was trained here on synthetic "
        "people (procedural clothes, ray-cast by open3d); subjects below are held out from training."
    )
    ui: dict = {"model_md": gr.Markdown(elem_id="av-model-info")}
    with gr.Row():
        with gr.Column(scale=4):
            _source_column(ui)
        with gr.Column(scale=5):
            _viewer_column(ui)
        with gr.Column(scale=4):
            _render_column(ui)
    _wire_inputs(demo, ui)
    _wire_actions(ui)
    _wire_avatar(ui)


# --- the long actions: requests in, results shown ---------------------------------------------------

def _reconstruct_request(kind, subject_v, views_v, iters_v, images, masks, cameras, *rest):
    """The request from the tab's inputs (the sliders: the pose the viewer and the files start in)."""
    from backends.avatar.requests import ReconstructRequest

    pose, model, keep = _pose(rest[:len(SLIDERS)]), rest[len(SLIDERS)] or EMBEDDED, rest[len(SLIDERS) + 1]
    if model not in (EMBEDDED, PUBLISHED):
        raise InputError(f"Unknown reconstructor {model!r}: {EMBEDDED!r} or {PUBLISHED!r}.")
    common = {"iterations": int(iters_v), "model": model, "pose": pose}
    if kind == "upload":
        from backends.avatar.uploads import read_views

        return ReconstructRequest(subject=None, upload=read_views(images, masks, cameras), **common)
    if kind == "photos":
        from backends.avatar.from_photos import keep_only

        fitted = sessions.fitted_photos(_session())
        kept = keep_only(fitted, list(keep) if keep is not None else fitted.names)  # refitted without dropped ones
        return ReconstructRequest(subject=None, upload=kept.upload(), **common)
    return ReconstructRequest(subject=int(subject_v or 0), n_views=int(views_v), **common)


def _show_avatar(request, result, paths):
    from backends.avatar.viewer import avatar_payload, bones_payload

    sessions.keep_avatar(_session(), result, paths)
    data = avatar_payload(result)
    views = [(str(paths[f"input_{i}"]), f"view {i}") for i in range(len(result.inputs))]
    bones = bones_payload(result, result.pose or result.input_pose, data["id"])
    return result.describe(), views, json.dumps(data), json.dumps(bones)


def _photos_request(paths):
    from backends.avatar.uploads import read_photos

    return read_photos(paths)


def _show_fit(request, fitted, paths):
    sessions.keep_photos(_session(), fitted)
    shown = [(str(paths[f"photo{i}_fit"]), name) for i, name in enumerate(fitted.names)]
    return (fitted.describe() + ". Untick a photo whose skeleton is wrong, then **Reconstruct**.", shown,
            gr.update(choices=fitted.names, value=fitted.names))


def _video_request(kind, frames_v, *pose_v):
    from backends.avatar.requests import VideoRequest

    pose = _pose(pose_v)
    avatar = sessions.avatar_file(_session(), lambda: new_output_dir("avatar"))
    return VideoRequest(kind=kind, pose=pose, frames=int(frames_v), size=256, avatar=avatar,
                        out=new_output_dir("avatar"))


def _wire_actions(ui: dict) -> None:
    """Reconstruct, fit and video through the backend's actions (their APIs keep their outputs' order, the status
    line where it was; a reconstruction's downloads follow it: ``avatar_downloads``); one Stop for the three
    (``avatar_stop``)."""
    # Progress and errors show on a status line; a failed action changes nothing else (the avatar, what
    # the model saw, the renders stay)
    made = bind_action(RECONSTRUCT, trigger=ui["recon_btn"].click, status=ui["status"],
                       inputs=[ui["source"], ui["subject"], ui["n_views"], ui["iterations"], ui["up_images"],
                               ui["up_masks"], ui["up_json"], *ui["sliders"], ui["model"], ui["keep"]],
                       outputs=[ui["inputs_gallery"], ui["status"], ui["payload"], ui["bones"]],
                       to_request=_reconstruct_request, show=_show_avatar, running="Reconstructing…",
                       stopped="Stopped by the user; the previous avatar (if any) is kept.")
    made.success(on_downloads, outputs=ui["files"], api_name="avatar_downloads", show_progress="hidden",
                 concurrency_id="avatar-render")
    bind_action(FIT_PHOTOS, trigger=ui["fit_btn"].click, status=ui["fit_md"], inputs=[ui["photo_files"]],
                outputs=[ui["fit_gallery"], ui["keep"], ui["fit_md"]], to_request=_photos_request, show=_show_fit,
                running="Finding the person and fitting the body…")
    bind_action(VIDEO, trigger=ui["video_btn"].click, status=ui["render_md"],
                inputs=[ui["video_kind"], ui["frames"], *ui["sliders"]], outputs=[ui["video_out"]],
                status_output=False,  # the API returns the video alone, as it always has
                to_request=_video_request, show=lambda request, v, paths: (v.describe(), str(v.path)),  # (the status text is dropped)
                folder=lambda request: request.out, running="Rendering the video…",
                stopped="Stopped by the user; no video was made (the one shown before, if any, stays).")
    bind_stop(ui["stop_btn"], ACTIONS, ui["status"], api_name="avatar_stop")  # one Stop for every action


# --- light actions on the session's avatar ----------------------------------------------------------

@user_errors
def on_pose(request: gr.Request, *values):
    from backends.avatar.uploads import shown_avatar_id
    from backends.avatar.viewer import bones_payload

    pose = _pose(values[:-1])  # checks the values even before there is an avatar
    shown = shown_avatar_id(values[-1])
    entry = sessions.shown_avatar(_session(request))
    if entry is None:  # moving sliders before reconstructing is fine: the pose applies to the next avatar
        return gr.update()
    return json.dumps(bones_payload(entry.result, pose, shown))


@user_errors
def on_preset(name, bones_v, request: gr.Request):
    from backends.avatar.params import preset
    from backends.avatar.uploads import shown_avatar_id
    from backends.avatar.viewer import bones_payload

    pose = preset(name)
    values = list(pose.as_dict().values())
    shown = shown_avatar_id(bones_v)
    entry = sessions.shown_avatar(_session(request))
    if entry is None:
        return *values, gr.update()
    return *values, json.dumps(bones_payload(entry.result, pose, shown))


@user_errors
def on_downloads(request: gr.Request):
    """The files of this session's last reconstruction, its run card (run.json) among them."""
    entry = sessions.shown_avatar(_session(request))
    return gr.update() if entry is None else [str(p) for p in entry.files if p.is_file()]


@user_errors
def on_render(request: gr.Request, az, size_v, *pose_v):
    from backends.avatar import service

    result = sessions.current_avatar(_session(request)).result
    r = service.render_novel(result, service.RenderRequest(pose=_pose(pose_v), azimuth_deg=float(az),
                                                           size=int(size_v)))
    return r.image, r.ground_truth, r.describe(result.n_gaussians)


@user_errors
def on_export(request: gr.Request, *pose_v):
    """The avatar in the sliders' pose, with the run card (run.json and the inputs it names) of the run that
    made it: a replay of it makes the same avatar (the card is gone only if that run's folder was cleaned away)."""
    from backends.avatar.outputs import write_avatar
    from backends.common.runcard import carry_card

    entry = sessions.current_avatar(_session(request))
    folder = new_output_dir("avatar")
    paths = write_avatar(entry.result, _pose(pose_v), folder)
    shown = [paths[k] for k in ("gaussians", "mesh_obj", "mesh_ply", "avatar")]
    run = next((p for p in entry.files if p.name == "run.json" and p.is_file()), None)
    return [str(p) for p in shown + (list(carry_card(run, folder).values()) if run is not None else [])]


@user_errors
def on_example(subject_v, views_v):
    from backends.avatar.outputs import write_example

    paths = write_example(int(subject_v or 0), int(views_v), 128, new_output_dir("avatar-example"))
    return [str(p) for p in paths.values()]


def _wire_inputs(demo: gr.Blocks, ui: dict) -> None:
    """The source switch, the model line and menu, the example upload."""

    def on_source(kind):
        return (gr.update(visible=kind == "synthetic"), gr.update(visible=kind == "photos"),
                gr.update(visible=kind == "upload"))

    ui["source"].change(on_source, inputs=ui["source"], outputs=[ui["synth_box"], ui["photos_box"],
                                                                  ui["upload_box"]],
                        api_visibility="private", queue=False)
    demo.load(model_info, outputs=ui["model_md"], api_visibility="private")
    demo.load(lambda: gr.update(choices=model_choices(), value=default_model()), outputs=ui["model"],
              api_visibility="private")
    listen(ui["example_btn"].click, on_example, status=ui["status"], inputs=[ui["subject"], ui["n_views"]],
           outputs=ui["example_files"], api_name="avatar_example", concurrency_id="avatar-render")


def _wire_avatar(ui: dict) -> None:
    """Posing (the browser re-poses; the server sends bone transforms), rendering and exporting."""
    sliders, bones = ui["sliders"], ui["bones"]
    for s in sliders:
        s.input(on_pose, inputs=[*sliders, bones], outputs=bones, api_name=False, show_progress="hidden",
                trigger_mode="always_last", concurrency_id="avatar-pose", concurrency_limit=4)
    pose_api = gr.Button(visible=False)
    pose_api.click(on_pose, inputs=[*sliders, bones], outputs=bones, api_name="avatar_pose",
                   concurrency_id="avatar-pose")
    ui["preset"].input(on_preset, inputs=[ui["preset"], bones], outputs=[*sliders, bones], api_name="avatar_preset",
                       show_progress="hidden", concurrency_id="avatar-pose")
    listen(ui["render_btn"].click, on_render, status=ui["render_md"], inputs=[ui["azimuth"], ui["size"], *sliders],
           outputs=[ui["render_img"], ui["truth_img"], ui["render_md"]], api_name="avatar_render",
           concurrency_id="avatar-render", concurrency_limit=2)
    listen(ui["export_btn"].click, on_export, status=ui["render_md"], inputs=sliders, outputs=ui["files"],
           api_name="avatar_export", concurrency_id="avatar-render")


TAB = TabSpec(name="avatar", title="Avatar", build=build)
