"""Video Depth tab (Depth Any Video): a video or an image in, consistent depth out — a playable side-by-side
video, raw 16-bit frames, the disparity stack, and a point cloud of any frame in the page.

The run is the backend's action (``backends.videodepth.actions.ESTIMATE_DEPTH``), bound to the Estimate and
the two Resume buttons; the tab only turns its inputs into a request and shows the result."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from app.components.action_button import bind_action
from app.components.downloads import new_output_dir
from app.components.errors import user_errors
from app.components.failures import listen
from app.components.model_choices import model_choices
from app.components.model_download import download_beside
from app.components.params import control, documented
from app.tabs import TabSpec
from backends.common.errors import InputError
from backends.videodepth.actions import ESTIMATE_DEPTH
from backends.videodepth.examples import EXAMPLES
from backends.videodepth.outputs import preview_frame, run_summary, summary_text
from backends.videodepth.requests import PointCloudRequest, VideoDepthRequest, checked, input_file
from backends.videodepth.runstore import run_id_of

STATIC = Path(__file__).resolve().parents[1] / "static"
INTRO = (
    "**Depth Any Video** (ICLR 2025): a flow-matching video-depth model with rotary frame positions gives "
    "every frame's relative depth in 1–3 steps, whole clips at once. Long videos stream: key frames spread "
    "over the whole video are inferred jointly, then the interpolation network fills the segments between them "
    "(the paper's way) or windows are aligned to them, so memory stays flat however long the video "
    "is. The embedded model was trained here on 64×64 renders of the project's primitive world (rooms with "
    "textured boxes, spheres, cones…): it shows the method at work on such clips; on real footage it mostly "
    "outputs a room prior (see its model card). Raw outputs: 16-bit PNG per frame, the `.npz` stack, `.ply`, "
    "and the run card `run.json` (`iclr25-studio replay run.json --out DIR` runs it again)."
)

VIEWER_HTML = """
<div class="pc-root" id="vd-viewer-root">
  <div class="pc-canvas"></div>
  <div class="pc-status">Run the estimation, pick a frame and press “Show point cloud”.</div>
</div>
"""
VIEWER_CSS = """
.pc-root { display: flex; flex-direction: column; gap: 4px; }
.pc-canvas { width: 100%; min-height: 200px; }
.pc-canvas canvas { display: block; width: 100%; border-radius: 6px; touch-action: none; }
.pc-status { font-size: 12px; color: #555; }
"""


def _viewer_js() -> str:
    url = f"/gradio_api/file={STATIC / 'videodepth' / 'pointcloud.js'}"
    return f"""
    import({json.dumps(url)}).then((m) => {{
      const viewer = m.mount(element.querySelector('.pc-root'));
      const showValue = () => viewer.show(props.value, element);
      watch('value', showValue);
      showValue();
    }}).catch((e) => {{ element.querySelector('.pc-status').textContent = '3D viewer failed to load: ' + e; }});
    """


def _request(input_path, model_id, max_side, num_inference_steps, stride, max_frames, colormap, baseline_frames,
             seed, initial_noise, long_video) -> VideoDepthRequest:
    """The page's settings as a request, checked (its out_dir is set when a run starts)."""
    return checked(VideoDepthRequest(input_file(input_path), Path("."), model_id=model_id, max_side=max_side,
                                     num_inference_steps=num_inference_steps, stride=stride, max_frames=max_frames,
                                     colormap=colormap, baseline_frames=baseline_frames,
                                     seed=0 if seed is None else seed, initial_noise=initial_noise or "zero",
                                     long_video=long_video or "auto"))


def _new_run(input_path, model_id, max_side, num_inference_steps, stride, max_frames, colormap, baseline_frames,
             seed, initial_noise, long_video) -> VideoDepthRequest:
    """A new run of the run store: the settings are checked before the upload is copied into its run folder
    (which outlives the server, named by the id the status shows)."""
    from backends.videodepth.runstore import start_run

    request = _request(input_path, model_id, max_side, num_inference_steps, stride, max_frames, colormap,
                       baseline_frames, seed, initial_noise, long_video)
    _, request = start_run(request.input_path, lambda local, out: replace(request, input_path=local, out_dir=out))
    return request


def _stopped_in_session(state) -> VideoDepthRequest:
    """Args:
        state: This session's last run (kept on the server).
    """
    request = (state or {}).get("stopped")
    if request is None:
        raise InputError("There is no stopped run to resume in this session; press “Estimate depth”.")
    return replace(request, resume=True)


def _stopped_by_id(run_id, state) -> VideoDepthRequest:
    """Args:
        run_id: The id of a stopped or interrupted run (the status shows it when a run starts), also one started
            before the server restarted.
        state: This session's last run (kept on the server; unused: the run id names the run).
    """
    from backends.videodepth.runstore import stopped_request

    if not (run_id or "").strip():
        raise InputError("Enter the id of the run to resume (the status showed it when the run started).")
    return stopped_request(run_id)


def _running(request) -> str:
    """The run's id shows first: it outlives this page and the server."""
    run_id = run_id_of(request)
    return f"Run `{run_id}` (its id resumes it, also after a restart) · running…" if run_id else "Running…"


def _stopped(request) -> tuple:
    from backends.videodepth.service import stopped_run

    run_id, saved = run_id_of(request), stopped_run(request.out_dir) or {}
    later = f" (run id `{run_id}`: after a restart of the server, enter it under *Run id*)" if run_id else ""
    text = (f"Stopped by the user after {saved.get('emitted', 0)} of {saved.get('source', {}).get('frames', '?')} "
            f"frames; press **Resume stopped run** to continue where it stopped{later}.")
    return text, *(gr.update(),) * 4, {"stopped": request, "npz": None, "run_id": run_id}


def _show(request, result, paths) -> tuple:
    """The backend's summary and files (the depth video first, the run card among them)."""
    run_id = run_id_of(request)
    files = [str(p) for p in paths.values()]
    state = {"request": request, "npz": str(result.npz), "frames": result.frames, "files": files}
    return (summary_text(result) + (f" · run `{run_id}`" if run_id else ""), str(paths["video"]), files,
            gr.update(maximum=max(1, result.frames - 1), value=0), {**run_summary(result), "run_id": run_id}, state)


@user_errors
@documented()
def on_example(name):
    """One of the held-out synthetic example clips, as the file input's value.

    Args:
        name: The example's name, as the page lists it (e.g. 'room A · 48 frames').
    """
    from backends.videodepth.examples import example_clip

    return str(example_clip(name)) if name else gr.update()


@user_errors
@documented(VideoDepthRequest)
def on_estimate(input_path, model_id, max_side, num_inference_steps, stride, max_frames, colormap, baseline_frames,
                seed, initial_noise, long_video):
    """What a run of these settings will cost before it starts: frames, windows, time and memory, measured on one
    window of the model."""
    from backends.videodepth.service import estimate_run

    if not input_path:
        return "Upload a video to see the time and memory a run takes."
    request = _request(input_path, model_id, max_side, num_inference_steps, stride, max_frames, colormap,
                       baseline_frames, seed, initial_noise, long_video)
    return "**Before you run:** " + estimate_run(request).summary()


@user_errors
@documented(PointCloudRequest)
def on_cloud(frame, state):
    """One frame of this session's finished run as a coloured point cloud (shown in the page's 3D viewer), its .ply
    added to the downloads.

    Args:
        state: This session's last run (kept on the server).
    """
    from backends.videodepth.service import frame_point_cloud

    state = state or {}
    if not state.get("npz"):
        raise InputError("Run the depth estimation first; the point cloud shows a frame of a finished run.")
    request = PointCloudRequest(state["request"].input_path, Path(state["npz"]), new_output_dir("videodepth-ply"),
                                frame=0 if frame is None else frame)
    cloud = frame_point_cloud(checked(request))
    return cloud.viewer, list(state.get("files", [])) + [str(cloud.ply)]


def _source_and_model():
    source = gr.File(label="Video or image (mp4, webm, mov, avi, mkv, png, jpg; ≤ 50 MB, ≤ 3000 frames)",
                     file_types=["video", "image"], type="filepath", elem_id="vd-input")
    example = gr.Radio(list(EXAMPLES), value=None, label="…or one click: a synthetic example clip (held-out render)",
                       elem_id="vd-example", info="Use a held-out synthetic clip instead of an upload.")
    estimate = gr.Markdown("Upload a video to see the time and memory a run takes.", elem_id="vd-estimate")
    from backends.videodepth.models import REAL_MODEL, default_model

    start_model = default_model()
    model = gr.Dropdown(model_choices("videodepth", details="license"), value=start_model, label="Model",
                        elem_id="vd-model",
                        info=(f"`{REAL_MODEL}` is present here, so it is chosen by default; " if start_model == REAL_MODEL
                              else "") + "Embedded: the small model trained here; the others: the paper's "
                             "once downloaded.")
    download_beside(model, "vd")
    return source, example, estimate, model


def _settings(model) -> list:
    """The run's settings, in the order of the API's inputs (after the file)."""
    with gr.Row():
        max_side = control(VideoDepthRequest, "max_side", elem_id="vd-res")
        steps = control(VideoDepthRequest, "num_inference_steps", elem_id="vd-steps")
    with gr.Row():
        stride = control(VideoDepthRequest, "stride", elem_id="vd-stride")
        max_frames = control(VideoDepthRequest, "max_frames", widget="number", elem_id="vd-max-frames")
    with gr.Row():
        cmap = control(VideoDepthRequest, "colormap", elem_id="vd-cmap")
        baseline = control(VideoDepthRequest, "baseline_frames", elem_id="vd-baseline")
        seed = control(VideoDepthRequest, "seed", widget="number")
        noise = control(VideoDepthRequest, "initial_noise", widget="radio", elem_id="vd-noise")
    long_video = control(VideoDepthRequest, "long_video", widget="radio", elem_id="vd-long-video")
    return [model, max_side, steps, stride, max_frames, cmap, baseline, seed, noise, long_video]


def _buttons():
    with gr.Row():
        run = gr.Button("Estimate depth", variant="primary", elem_id="vd-run")
        stop = gr.Button("Stop", variant="stop", elem_id="vd-stop")
        resume = gr.Button("Resume stopped run", elem_id="vd-resume")
    with gr.Row():  # the session is gone after a restart of the server; the run is not
        run_id = gr.Textbox(label="Run id (to resume a stopped or interrupted run, also after a restart)",
                            max_lines=1, scale=3, elem_id="vd-run-id",
                            info="A run's id: paste one and press Resume to continue it, also after a restart.",
                            placeholder="shown when a run starts")
        resume_id = gr.Button("Resume run by id", scale=1, elem_id="vd-resume-id")
    return run, stop, resume, run_id, resume_id


def _results():
    preview = gr.Image(label="Latest frame while it runs (input | depth)", type="numpy", height=160,
                       interactive=False, elem_id="vd-preview")
    status = gr.Markdown(elem_id="vd-status")
    video = gr.Video(label="Input | depth (H.264)", format="mp4", interactive=False, elem_id="vd-video")
    files = gr.File(label="Downloads: side-by-side mp4, 16-bit PNG zip, disparity .npz, run card, .ply",
                    file_count="multiple", elem_id="vd-files")
    return preview, status, video, files


def _point_cloud():
    with gr.Row():
        frame = control(PointCloudRequest, "frame", elem_id="vd-frame")
        cloud_btn = gr.Button("Show point cloud", elem_id="vd-cloud")
    viewer = gr.HTML("", html_template=VIEWER_HTML, css_template=VIEWER_CSS, js_on_load=_viewer_js(),
                     elem_id="vd-viewer", apply_default_css=False)
    gr.Markdown("Relative depth shown with an assumed near : far of 1 : 5 and a 55° field of view.")
    summary = gr.JSON(label="Run (JSON)", elem_id="vd-json")
    return frame, cloud_btn, viewer, summary


def build(demo: gr.Blocks) -> None:
    gr.set_static_paths([STATIC])
    gr.Markdown(INTRO)
    run_state = gr.State({})
    with gr.Row():
        with gr.Column(scale=4):
            source, example, estimate, model = _source_and_model()
            settings = _settings(model)
            run, stop, resume, run_id, resume_id = _buttons()
        with gr.Column(scale=5):
            preview, status, video, files = _results()
        with gr.Column(scale=4):
            frame, cloud_btn, viewer, summary = _point_cloud()
    ui = SimpleNamespace(source=source, example=example, estimate=estimate, settings=settings, run=run, stop=stop,
                         resume=resume, run_id=run_id, resume_id=resume_id, preview=preview, status=status,
                         video=video, files=files, frame=frame, cloud_btn=cloud_btn, viewer=viewer, summary=summary,
                         state=run_state)
    _wire(ui)


def _wire(ui: SimpleNamespace) -> None:
    """Light actions (an example, the estimate, a point cloud) have queues of their own; the run, and its two
    resumes, are the backend's action on the shared "gpu" queue. Progress and errors show on the estimate /
    status line; a failed action changes nothing else."""
    ui.example.input(on_example, inputs=ui.example, outputs=ui.source, api_name="videodepth_example",
                     concurrency_id="videodepth-light")
    listen([ui.source.change, *(c.change for c in ui.settings)], on_estimate, status=ui.estimate,
           inputs=[ui.source, *ui.settings], outputs=ui.estimate, keep_status=False, api_name="videodepth_estimate",
           concurrency_id="videodepth-estimate", concurrency_limit=1, trigger_mode="always_last")
    run = {"status": ui.status, "preview": ui.preview, "to_preview": preview_frame, "show": _show,
           "outputs": [ui.video, ui.files, ui.frame, ui.summary, ui.state], "running": _running, "stopped": _stopped}
    bind_action(ESTIMATE_DEPTH, trigger=ui.run.click, stop=ui.stop, inputs=[ui.source, *ui.settings],
                to_request=_new_run, api_name="videodepth_run", **run)
    bind_action(ESTIMATE_DEPTH, trigger=ui.resume.click, inputs=[ui.state], to_request=_stopped_in_session,
                api_name="videodepth_resume", **run)  # the one Stop stops any of the three: one action
    bind_action(ESTIMATE_DEPTH, trigger=ui.resume_id.click, inputs=[ui.run_id, ui.state], to_request=_stopped_by_id,
                api_name="videodepth_resume_run", **run)
    listen(ui.cloud_btn.click, on_cloud, status=ui.status, inputs=[ui.frame, ui.state], outputs=[ui.viewer, ui.files],
           api_name="videodepth_point_cloud", concurrency_id="videodepth-light")


TAB = TabSpec(name="videodepth", title="Video Depth", build=build)
