"""Video Depth tab (Depth Any Video): a video or an image in, consistent depth out — a playable side-by-side
video, raw 16-bit frames, the disparity stack, and a point cloud of any frame in the page."""

from __future__ import annotations

import json
from pathlib import Path

import gradio as gr

from app.components.downloads import new_output_dir, servable
from app.components.errors import user_errors
from app.components.failures import listen
from app.components.longwork import CANCELS, stream
from app.components.model_download import download_beside
from app.tabs import TabSpec
from backends.common.errors import Cancelled, InputError
from backends.common.imageio import upscale
from backends.videodepth.examples import EXAMPLES
from backends.videodepth.outputs import COLORMAPS

STATIC = Path(__file__).resolve().parents[1] / "static"
WINDOW = 16  # frames per window; the key-frame stride sets the overlap (window − stride)
RESOLUTIONS = [64, 128, 256]
ACTION = "videodepth"

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


def model_choices() -> list[tuple[str, str]]:
    """(label, id) of every registered Video Depth model, saying whether it is present here."""
    from backends.common.registry import default_registry, model_status

    return [(f"{s.id} ({s.license}; {'present' if model_status(s).present else 'missing'})", s.id)
            for s in default_registry().for_capability("videodepth")]


def _request(file, model_id, max_side, steps, stride, max_frames, cmap, baseline, seed, noise, long_video, out_dir,
             resume=False):
    VideoDepthRequest = service().VideoDepthRequest  # noqa: N806

    if not file:
        raise InputError("Upload a video or an image first (or pick an example).")
    stride = int(stride)
    if not 1 <= stride < WINDOW:
        raise InputError(f"The key-frame stride must be between 1 and {WINDOW - 1} frames.")
    return VideoDepthRequest(Path(file), Path(out_dir), model_id=model_id, max_side=int(max_side),
                             num_inference_steps=int(steps), window=WINDOW, overlap=WINDOW - stride,
                             max_frames=int(max_frames), colormap=cmap, baseline_frames=int(baseline),
                             seed=int(seed or 0), initial_noise=noise or "zero", resume=resume,
                             long_video=long_video or "auto")


def service():
    """The backend service module, imported on first use (the app imports it before serving:
    ``backends.common.modelbuild.preload``)."""
    import backends.videodepth.service as svc

    return svc


def _model(model_id: str):
    """The model, loaded once per process by the backend (one build at a time, never a broken one kept)."""
    from backends.common.device import select_device
    from backends.videodepth.loading import load_model

    return load_model(model_id, str(select_device()))


def _result_status(r) -> str:
    flick = ""
    if r.flicker is not None:
        flick = (f"\n\n**Flicker** (no ground truth: change of depth where the picture did not change, frames "
                 f"0–{r.flicker_frames - 1}; lower is steadier): ours **{r.flicker:.4f}** · same model frame by "
                 f"frame **{r.baseline_flicker:.4f}**" if r.baseline_flicker is not None else "")
    notes = " · ".join(n for n in r.notes if n != r.notice)
    warn = f"\n\n⚠️ {r.notice}" if r.notice else ""
    return (f"**Done:** {r.frames} frame(s) at {r.size[0]}×{r.size[1]} in {r.seconds:.1f} s · model `{r.model_id}` "
            f"on `{r.device}` · {notes}{warn}{flick}")


def _summary(r) -> dict:
    return {"model": r.model_id, "device": r.device, "frames": r.frames, "size": list(r.size), "fps": r.fps,
            "truncated": r.truncated, "seconds": round(r.seconds, 2), "resumed_at_frame": r.resumed_at,
            "flicker": r.flicker, "baseline_flicker": r.baseline_flicker, "flicker_frames": r.flicker_frames,
            "notes": r.notes, "domain": r.domain.to_json() if r.domain is not None else None}


def build(demo: gr.Blocks) -> None:
    gr.set_static_paths([STATIC])
    gr.Markdown(
        "**Depth Any Video** (ICLR 2025): a flow-matching video-depth model with rotary frame positions gives "
        "every frame's relative depth in 1–3 steps, whole clips at once. Long videos stream: key frames spread "
        "over the whole video are inferred jointly, then the interpolation network fills the segments between them "
        "(the paper's way) or windows are aligned to them, so memory stays flat however long the video "
        "is. The embedded model was trained here on 64×64 renders of the project's primitive world (rooms with "
        "textured boxes, spheres, cones…): it shows the method at work on such clips; on real footage it mostly "
        "outputs a room prior (see its model card). Raw outputs: 16-bit PNG per frame, the `.npz` stack, `.ply`."
    )
    run_state = gr.State({})
    with gr.Row():
        with gr.Column(scale=4):
            source = gr.File(label="Video or image (mp4, webm, mov, avi, mkv, png, jpg; ≤ 50 MB, ≤ 3000 frames)",
                             file_types=["video", "image"], type="filepath", elem_id="vd-input")
            example = gr.Radio(list(EXAMPLES), value=None, label="…or one click: a synthetic example clip (held-out render)",
                               elem_id="vd-example",
                               info="Use a held-out synthetic clip instead of an upload.")
            estimate = gr.Markdown("Upload a video to see the time and memory a run takes.", elem_id="vd-estimate")
            from backends.videodepth.models import REAL_MODEL, default_model

            start_model = default_model()
            model = gr.Dropdown(model_choices(), value=start_model, label="Model", elem_id="vd-model",
                                info=(f"`{REAL_MODEL}` is present here, so it is chosen by default; " if start_model == REAL_MODEL
                                      else "") + "Embedded: the small model trained here; the others: the paper's "
                                     "once downloaded.")
            download_beside(model, "vd")
            with gr.Row():
                max_side = gr.Dropdown(RESOLUTIONS, value=64, label="Max resolution (longer side; embedded: 64)",
                                       elem_id="vd-res",
                                       info="Frames are scaled so their longer side is at most this; larger is slower.")
                steps = gr.Slider(1, 3, value=1, step=1, label="Euler steps (paper: 1–3)", elem_id="vd-steps",
                                  info="Flow-matching Euler steps per window (the paper: 1–3); more is slower.")
            with gr.Row():
                stride = gr.Slider(4, 14, value=12, step=1, label=f"Key-frame stride (window {WINDOW})",
                                   elem_id="vd-stride",
                                   info="Frames between key frames; the frames between are filled in from them.")
                max_frames = gr.Number(600, precision=0, minimum=1, maximum=3000, label="Max frames",
                                       elem_id="vd-max-frames",
                                       info="Only the first this many frames of the video are estimated.")
            with gr.Row():
                cmap = gr.Dropdown(list(COLORMAPS), value="Spectral", label="Colour map", elem_id="vd-cmap",
                                   info="How depth is coloured in the video; the raw depth is in the downloads.")
                baseline = gr.Slider(0, 96, value=24, step=1, label="Per-frame baseline frames (flicker score)",
                                     elem_id="vd-baseline",
                                     info="Frames also estimated one by one, to score the flicker the video model avoids (0: skip).")
                seed = gr.Number(0, precision=0, minimum=0, label="Seed",
                                 info="Used only when the initial noise is random (shared or independent).")
                noise = gr.Radio(["zero", "shared", "independent"], value="zero", label="Initial noise",
                                 elem_id="vd-noise",
                                 info="zero: every frame starts from the noise's mean (deterministic, steadiest on "
                                      "the embedded model); shared: one random map for all frames; independent: "
                                      "a new map per frame (the reference's sampling).")
            long_video = gr.Radio(["auto", "interpolation", "windows"], value="auto", label="Long videos",
                                  elem_id="vd-long-video",
                                  info="interpolation: the paper's interpolation network fills the segments between "
                                       "key frames; windows: windows of 16 aligned to the key frames; auto: the "
                                       "model's better one on held-out clips (see its model card).")
            with gr.Row():
                run = gr.Button("Estimate depth", variant="primary", elem_id="vd-run")
                stop = gr.Button("Stop", variant="stop", elem_id="vd-stop")
                resume = gr.Button("Resume stopped run", elem_id="vd-resume")
            with gr.Row():  # the session is gone after a restart of the server; the run is not
                run_id = gr.Textbox(label="Run id (to resume a stopped or interrupted run, also after a restart)",
                                    max_lines=1, scale=3, elem_id="vd-run-id",
                                    info="A run's id: paste one and press Resume to continue it, also after a restart.", placeholder="shown when a run starts")
                resume_id = gr.Button("Resume run by id", scale=1, elem_id="vd-resume-id")
        with gr.Column(scale=5):
            preview = gr.Image(label="Latest frame while it runs (input | depth)", type="numpy", height=160,
                               interactive=False, elem_id="vd-preview")
            status = gr.Markdown(elem_id="vd-status")
            video = gr.Video(label="Input | depth (H.264)", format="mp4", interactive=False, elem_id="vd-video")
            files = gr.File(label="Downloads: side-by-side mp4, 16-bit PNG zip, disparity .npz, .ply",
                            file_count="multiple", elem_id="vd-files")
        with gr.Column(scale=4):
            with gr.Row():
                frame = gr.Slider(0, 1, value=0, step=1, label="Frame for the point cloud", elem_id="vd-frame",
                                  info="Which frame's depth becomes the 3D point cloud.")
                cloud_btn = gr.Button("Show point cloud", elem_id="vd-cloud")
            viewer = gr.HTML("", html_template=VIEWER_HTML, css_template=VIEWER_CSS, js_on_load=_viewer_js(),
                             elem_id="vd-viewer", apply_default_css=False)
            gr.Markdown("Relative depth shown with an assumed near : far of 1 : 5 and a 55° field of view.")
            summary = gr.JSON(label="Run (JSON)", elem_id="vd-json")

    settings = [model, max_side, steps, stride, max_frames, cmap, baseline, seed, noise, long_video]

    @user_errors
    def on_example(name):
        from backends.videodepth.examples import example_clip

        return str(example_clip(name)) if name else gr.update()

    @user_errors
    def on_estimate(file, model_id, max_side_v, steps_v, stride_v, max_frames_v, cmap_v, baseline_v, seed_v, noise_v,
                    long_video_v):
        if not file:
            return "Upload a video to see the time and memory a run takes."
        req = _request(file, model_id, max_side_v, steps_v, stride_v, max_frames_v, cmap_v, baseline_v, seed_v,
                       noise_v, long_video_v, ".")
        return "**Before you run:** " + service().estimate_run(req, _model(model_id)).summary()

    def _run(req, state, request, progress, run_id=None):
        estimate_depth, stopped_run = service().estimate_depth, service().stopped_run
        token = CANCELS.start(request, ACTION)
        try:  # the run's id shows first: it outlives this page and the server
            running = f"Run `{run_id}` (its id resumes it, also after a restart) · running…" if run_id else "Running…"
            yield gr.update(), running, *(gr.update(),) * 4, state
            for kind, item in stream(estimate_depth(req, _model(req.model_id), token), progress):
                if kind == "preview":  # small frames are enlarged for the eye (nearest neighbour)
                    yield upscale(item, max(1, 192 // item.shape[0])), *(gr.update(),) * 5, state
                else:
                    # the run folder is outside what Gradio serves: the page gets linked copies
                    return_files = servable([item.video, item.png_zip, item.npz], "videodepth")
                    done = {"request": req, "npz": str(item.npz), "frames": item.frames, "files": return_files}
                    yield (gr.update(), _result_status(item) + (f" · run `{run_id}`" if run_id else ""),
                           return_files[0], return_files, gr.update(maximum=max(1, item.frames - 1), value=0),
                           {**_summary(item), "run_id": run_id}, done)
        except Cancelled:
            saved = stopped_run(req.out_dir) or {}
            state = {"stopped": req, "npz": None, "run_id": run_id}
            later = (f" (run id `{run_id}`: after a restart of the server, enter it under *Run id*)" if run_id else "")
            yield (gr.update(), f"Stopped by the user after {saved.get('emitted', 0)} of {saved.get('source', {}).get('frames', '?')} "
                   f"frames; press **Resume stopped run** to continue where it stopped{later}.", *(gr.update(),) * 4,
                   state)
        finally:
            CANCELS.finish(request, ACTION, token)

    @user_errors
    def on_run(file, model_id, max_side_v, steps_v, stride_v, max_frames_v, cmap_v, baseline_v, seed_v, noise_v,
               long_video_v, state, request: gr.Request, progress=gr.Progress()):
        if not file:
            raise InputError("Upload a video or an image first (or pick an example).")
        values = (model_id, max_side_v, steps_v, stride_v, max_frames_v, cmap_v, baseline_v, seed_v, noise_v,
                  long_video_v)
        _request(file, *values, ".")  # settings checked before anything is copied
        from backends.videodepth.runstore import discard_unstarted, start_run

        # the run keeps its input (resume and point clouds need it) under the uploaded name that messages quote,
        # in a run folder that outlives the server, named by the id the status shows (backends.common.runs)
        run_id, req = start_run(Path(file), lambda local, out: _request(str(local), *values, out))
        try:
            yield from _run(req, state, request, progress, run_id)
        except InputError:
            discard_unstarted(run_id)  # a refused input is no run to keep
            raise

    @user_errors
    def on_resume(state, request: gr.Request, progress=gr.Progress()):
        from dataclasses import replace

        req = (state or {}).get("stopped")
        if req is None:
            raise InputError("There is no stopped run to resume in this session; press “Estimate depth”.")
        yield from _run(replace(req, resume=True), state, request, progress, (state or {}).get("run_id"))

    @user_errors
    def on_resume_run(run_id_v, state, request: gr.Request, progress=gr.Progress()):
        from backends.videodepth.runstore import stopped_request

        if not (run_id_v or "").strip():
            raise InputError("Enter the id of the run to resume (the status showed it when the run started).")
        req = stopped_request(run_id_v)
        yield from _run(req, state, request, progress, run_id_v.strip().lower())

    @user_errors
    def on_cloud(frame_v, state):
        svc = service()
        state = state or {}
        if not state.get("npz"):
            raise InputError("Run the depth estimation first; the point cloud shows a frame of a finished run.")
        req = state["request"]
        cloud = svc.frame_point_cloud(svc.PointCloudRequest(req.input_path, Path(state["npz"]), int(frame_v or 0),
                                                    new_output_dir("videodepth-ply")))
        return cloud.viewer, list(state.get("files", [])) + [str(cloud.ply)]

    def on_stop(request: gr.Request) -> str:
        return "Stopping…" if CANCELS.cancel(request, ACTION) else "Nothing is running."

    outs = [preview, status, video, files, frame, summary, run_state]
    example.input(on_example, inputs=example, outputs=source, api_name="videodepth_example",
                  concurrency_id="videodepth-light")
    # Progress and errors show on the estimate / status line; a failed action changes nothing else
    listen([source.change, *(c.change for c in settings)], on_estimate, status=estimate, inputs=[source, *settings],
           outputs=estimate, keep_status=False, api_name="videodepth_estimate",
           concurrency_id="videodepth-estimate", concurrency_limit=1, trigger_mode="always_last")
    listen(run.click, on_run, status=status, inputs=[source, *settings, run_state], outputs=outs,
           api_name="videodepth_run", concurrency_id="gpu")
    listen(resume.click, on_resume, status=status, inputs=run_state, outputs=outs, api_name="videodepth_resume",
           concurrency_id="gpu")
    listen(resume_id.click, on_resume_run, status=status, inputs=[run_id, run_state], outputs=outs,
           api_name="videodepth_resume_run", concurrency_id="gpu")
    stop.click(on_stop, outputs=status, api_name="videodepth_stop", queue=False)
    listen(cloud_btn.click, on_cloud, status=status, inputs=[frame, run_state], outputs=[viewer, files],
           api_name="videodepth_point_cloud", concurrency_id="videodepth-light")


TAB = TabSpec(name="videodepth", title="Video Depth", build=build)
