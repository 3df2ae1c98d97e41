"""Avatar tab (LIFe-GoM): a few views of a person → an animatable Gaussians-on-Mesh avatar, posed and
rendered live in the browser (Spark) and on the server (the compiled CPU tile renderer).

Every action is the backend's (``backends.avatar.actions``: reconstruct, fit photos, video, render, export,
example) bound to its button with its progress, Stop and run card; its controls come from its request's fields
(``backends.avatar.requests``; the pose sliders from ``Pose``'s), so the tab, the API and the CLI agree. What a
session keeps between actions lives in ``backends.avatar.sessions``."""

from __future__ import annotations

import functools
import inspect
import json
from pathlib import Path

import gradio as gr

from app.components.action_button import bind_action, bind_stop, current_session
from app.components.downloads import new_output_dir
from app.components.errors import user_errors
from app.components.model_choices import model_choices as registered_choices
from app.components.params import control, documented
from app.tabs import TabSpec
from backends.avatar import sessions
from backends.avatar.actions import ACTIONS, EXAMPLE, EXPORT, FIT_PHOTOS, RECONSTRUCT, RENDER, VIDEO
from backends.avatar.models import EMBEDDED_MODEL, PUBLISHED_MODEL
from backends.avatar.params import PRESETS, Pose
from backends.avatar.requests import (
    ExampleRequest,
    ExportRequest,
    ReconstructRequest,
    RenderRequest,
    VideoRequest,
)
from backends.common.errors import InputError
from backends.common.params import field_spec, fields_of

STATIC = Path(__file__).resolve().parents[1] / "static"
EMBEDDED, PUBLISHED = EMBEDDED_MODEL, PUBLISHED_MODEL
SLIDERS = tuple(fields_of(Pose))  # the pose sliders in the tab's (and the API's) order: Pose's fields
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


def pose_parameters(fn):
    """``fn`` with its ``pose`` parameter given as the pose sliders: one named parameter per ``Pose`` field, in
    the sliders' order (what the API lists, each documented from its field), made into a checked ``Pose``. Where
    ``pose`` has a default (``pose=None``), each slider's default is its field's (the API may leave it out)."""
    signature = inspect.signature(fn)
    declared = fields_of(Pose)
    params = []
    for p in signature.parameters.values():
        if p.name != "pose":
            params.append(p)
            continue
        params += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                     default=declared[n].default if p.default is not p.empty else p.empty)
                   for n in SLIDERS]
    expanded = signature.replace(parameters=params)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = expanded.bind(*args, **kwargs)
        bound.apply_defaults()
        given = bound.arguments
        pose = Pose(**{name: given.pop(name) for name in SLIDERS})
        return fn(**given, pose=pose)

    wrapper.__signature__ = expanded
    doc = inspect.getdoc(fn) or ""
    lines = [f"    {name}: {' '.join(spec.describe().split())}" for name, spec in declared.items()]
    wrapper.__doc__ = doc + ("\n" if "Args:" in doc else "\n\nArgs:\n") + "\n".join(lines)
    return wrapper


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
        ui["subject"] = control(ReconstructRequest, "subject", widget="number", elem_id="av-subject")
        ui["n_views"] = control(ReconstructRequest, "n_views", elem_id="av-views")
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
    ui["iterations"] = control(ReconstructRequest, "iterations", elem_id="av-iters")
    model = field_spec(ReconstructRequest, "model")  # the choices are the registry's models present now
    ui["model"] = gr.Dropdown(model_choices(), value=default_model(), label=model.label, elem_id="av-model",
                              info=model.param.help)
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
    with gr.Accordion("Pose sliders (degrees; the avatar re-poses in the browser as you drag)", open=True):
        for i in range(0, len(SLIDERS), 3):
            with gr.Row():
                for name in SLIDERS[i:i + 3]:
                    ui["sliders"].append(control(Pose, name, min_width=120, elem_id=f"av-pose-{name}"))
    ui["payload"] = gr.Textbox(label="avatar data", elem_id="av-payload", elem_classes=["av-hidden"], max_lines=1)
    ui["bones"] = gr.Textbox(label="pose data", elem_id="av-bones", elem_classes=["av-hidden"], max_lines=1)


def _render_column(ui: dict) -> None:
    with gr.Row():
        ui["azimuth"] = control(RenderRequest, "azimuth_deg", elem_id="av-azimuth")
        ui["size"] = control(RenderRequest, "size", elem_id="av-size")
    ui["render_btn"] = gr.Button("Render novel view (server)", elem_id="av-render")
    with gr.Row():
        ui["render_img"] = gr.Image(label="Render", type="numpy", interactive=False, height=260,
                                    elem_id="av-render-image")
        ui["truth_img"] = gr.Image(label="Ground truth (synthetic subjects)", type="numpy", interactive=False,
                                   height=260, elem_id="av-truth-image")
    ui["render_md"] = gr.Markdown(elem_id="av-render-status")
    with gr.Row():
        ui["video_kind"] = control(VideoRequest, "kind", widget="radio", elem_id="av-video-kind")
        ui["frames"] = control(VideoRequest, "frames", elem_id="av-frames")
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


# --- the actions: requests in, results shown --------------------------------------------------------

@pose_parameters
def _reconstruct_request(source, subject, n_views, iterations, images=None, masks=None, cameras=None, pose=None,
                         model=None, keep=None):
    """The request from the tab's inputs (the pose sliders: the pose the viewer and the files start in).

    Args:
        source: Where the views come from: 'synthetic' (a held-out synthetic person: subject, n_views), 'photos' (the photos this session fitted with /avatar_fit_photos) or 'upload' (images, masks and cameras).
        images: 'upload': the views' image files (1–5).
        masks: 'upload': one mask file per image (white = the person), named as the cameras file says.
        cameras: 'upload': the cameras and pose JSON file (see the README; /avatar_example writes one).
        keep: 'photos': the names of the fitted photos to reconstruct from (the body is fitted again without the others); none (null): all of them.
    """
    model = model or EMBEDDED
    if model not in (EMBEDDED, PUBLISHED):  # a checkpoint folder is the CLI's: no server path from a page or the API
        raise InputError(f"Unknown reconstructor {model!r}: {EMBEDDED!r} or {PUBLISHED!r}.")
    common = {"iterations": iterations, "model": model, "pose": pose}
    if source == "upload":
        from backends.avatar.uploads import read_views

        return ReconstructRequest(subject=None, upload=read_views(images, masks, cameras), **common)
    if source == "photos":
        from backends.avatar.from_photos import keep_only

        fitted = sessions.fitted_photos(_session())
        kept = keep_only(fitted, list(keep) if keep is not None else fitted.names)  # refitted without the dropped ones
        return ReconstructRequest(subject=None, upload=kept.upload(), **common)
    if source != "synthetic":
        raise InputError(f"Unknown source {source!r}: 'synthetic', 'photos' or 'upload'.")
    return ReconstructRequest(subject=0 if subject is None else subject, n_views=n_views, **common)


def _show_avatar(request, result, paths):
    from backends.avatar.viewer import avatar_payload, bones_payload

    sessions.keep_avatar(_session(), result, paths)
    data = avatar_payload(result)
    views = [(str(paths[f"input_{i}"]), f"view {i}") for i in range(len(result.inputs))]
    bones = bones_payload(result, result.pose or result.input_pose, data["id"])
    return result.describe(), views, json.dumps(data), json.dumps(bones)


def _photos_request(photos):
    from backends.avatar.uploads import read_photos

    return read_photos(photos)


def _show_fit(request, fitted, paths):
    sessions.keep_photos(_session(), fitted)
    shown = [(str(paths[f"photo{i}_fit"]), name) for i, name in enumerate(fitted.names)]
    return (fitted.describe() + ". Untick a photo whose skeleton is wrong, then **Reconstruct**.", shown,
            gr.update(choices=fitted.names, value=fitted.names))


def _session_avatar() -> Path:
    """The file of this session's avatar (what the render, video and export requests name)."""
    return sessions.avatar_file(_session(), lambda: new_output_dir("avatar"))


@pose_parameters
def _video_request(kind, frames, pose):
    return VideoRequest(kind=kind, pose=pose, frames=frames, avatar=_session_avatar(), out=new_output_dir("avatar"))


@pose_parameters
def _render_request(azimuth_deg, size, pose):
    return RenderRequest(pose=pose, azimuth_deg=azimuth_deg, size=size, avatar=_session_avatar())


def _show_render(request, r, paths):
    return r.describe(), r.image, r.ground_truth


@pose_parameters
def _export_request(pose):
    return ExportRequest(pose=pose, avatar=_session_avatar())


def _example_request(subject, n_views):
    return ExampleRequest(subject=0 if subject is None else subject, n_views=n_views)


def _files(request, result, paths):
    """(status text, the run's files): what a download of it holds, its run card among them."""
    return result.describe(), [str(p) for p in paths.values()]


def _wire_actions(ui: dict) -> None:
    """Every action through the backend's (their APIs keep their outputs' order, the status line where it was; a
    reconstruction's downloads follow it: ``avatar_downloads``); one Stop for them all (``avatar_stop``)."""
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
    # light: renders, exports and examples never wait behind a reconstruction (their own queue, two at a time)
    light = {"concurrency_id": "avatar-render", "concurrency_limit": 2}
    bind_action(RENDER, trigger=ui["render_btn"].click, status=ui["render_md"],
                inputs=[ui["azimuth"], ui["size"], *ui["sliders"]],
                outputs=[ui["render_img"], ui["truth_img"], ui["render_md"]], to_request=_render_request,
                show=_show_render, running="Rendering…",
                stopped="Stopped by the user; the render shown before (if any) stays.", **light)
    bind_action(EXPORT, trigger=ui["export_btn"].click, status=ui["render_md"], inputs=ui["sliders"],
                outputs=[ui["files"]], status_output=False,  # the API returns the files alone, as it always has
                to_request=_export_request, show=_files, running="Exporting…",
                stopped="Stopped by the user; nothing was exported.", **light)
    bind_action(EXAMPLE, trigger=ui["example_btn"].click, status=ui["status"], inputs=[ui["subject"], ui["n_views"]],
                outputs=[ui["example_files"]], status_output=False, to_request=_example_request, show=_files,
                folder=lambda request: new_output_dir("avatar-example"), running="Ray-casting the example's views…",
                stopped="Stopped by the user; no example was made.", **light)
    bind_stop(ui["stop_btn"], ACTIONS, ui["status"], api_name="avatar_stop")  # one Stop for every action


# --- light handlers on the session's avatar -----------------------------------------------------------

@user_errors
@documented(Pose)
@pose_parameters
def on_pose(pose, pose_data, request: gr.Request):
    """The avatar's bone transforms in the pose the sliders give (the browser's viewer re-poses its splats with them).

    Args:
        pose_data: The pose data the page's viewer holds (the JSON this tab writes; its avatar id is kept), or empty.
    """
    from backends.avatar.uploads import shown_avatar_id
    from backends.avatar.viewer import bones_payload

    shown = shown_avatar_id(pose_data)
    entry = sessions.shown_avatar(_session(request))
    if entry is None:  # moving sliders before reconstructing is fine: the pose applies to the next avatar
        return gr.update()
    return json.dumps(bones_payload(entry.result, pose, shown))


@user_errors
@documented()
def on_preset(preset, pose_data, request: gr.Request):
    """A ready pose: the pose sliders' values and the avatar's bone transforms in it.

    Args:
        preset: The pose preset's name (A-pose, T-pose, walking, waving, sitting, arms up).
        pose_data: The pose data the page's viewer holds (the JSON this tab writes; its avatar id is kept), or empty.
    """
    from backends.avatar.params import preset as named_preset
    from backends.avatar.uploads import shown_avatar_id
    from backends.avatar.viewer import bones_payload

    pose = named_preset(preset)
    values = list(pose.as_dict().values())
    shown = shown_avatar_id(pose_data)
    entry = sessions.shown_avatar(_session(request))
    if entry is None:
        return *values, gr.update()
    return *values, json.dumps(bones_payload(entry.result, pose, shown))


@user_errors
def on_downloads(request: gr.Request):
    """The files of this session's last reconstruction, its run card (run.json) among them."""
    entry = sessions.shown_avatar(_session(request))
    return gr.update() if entry is None else [str(p) for p in entry.files if p.is_file()]


def _wire_inputs(demo: gr.Blocks, ui: dict) -> None:
    """The source switch, the model line and menu."""

    def on_source(kind):
        return (gr.update(visible=kind == "synthetic"), gr.update(visible=kind == "photos"),
                gr.update(visible=kind == "upload"))

    ui["source"].change(on_source, inputs=ui["source"], outputs=[ui["synth_box"], ui["photos_box"],
                                                                  ui["upload_box"]],
                        api_visibility="private", queue=False)
    demo.load(model_info, outputs=ui["model_md"], api_visibility="private")
    demo.load(lambda: gr.update(choices=model_choices(), value=default_model()), outputs=ui["model"],
              api_visibility="private")


def _wire_avatar(ui: dict) -> None:
    """Posing: the browser re-poses; the server sends bone transforms."""
    sliders, bones = ui["sliders"], ui["bones"]
    for s in sliders:
        s.input(on_pose, inputs=[*sliders, bones], outputs=bones, api_name=False, show_progress="hidden",
                trigger_mode="always_last", concurrency_id="avatar-pose", concurrency_limit=4)
    pose_api = gr.Button(visible=False)
    pose_api.click(on_pose, inputs=[*sliders, bones], outputs=bones, api_name="avatar_pose",
                   concurrency_id="avatar-pose")
    ui["preset"].input(on_preset, inputs=[ui["preset"], bones], outputs=[*sliders, bones], api_name="avatar_preset",
                       show_progress="hidden", concurrency_id="avatar-pose")


TAB = TabSpec(name="avatar", title="Avatar", build=build)
