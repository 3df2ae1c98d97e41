"""Avatar tab (LIFe-GoM): a few views of a person → an animatable Gaussians-on-Mesh avatar, posed and
rendered live in the browser (Spark) and on the server (the compiled CPU tile renderer)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import fields
from pathlib import Path

import gradio as gr
import numpy as np

from app.components.downloads import new_output_dir
from app.components.errors import user_errors
from app.components.failures import listen
from app.components.longwork import CANCELS, stream
from app.tabs import TabSpec
from backends.common import jsontext
from backends.common.errors import Cancelled, InputError

STATIC = Path(__file__).resolve().parents[1] / "static"
EMBEDDED = "avatar-embedded"
# slider → label; ranges come from backends.avatar.pose.SLIDER_RANGES (imported lazily: it pulls torch)
SLIDERS = {
    "yaw": "Turn (yaw)", "arm_raise_l": "Left arm raise", "arm_raise_r": "Right arm raise",
    "arm_forward_l": "Left arm forward", "arm_forward_r": "Right arm forward", "elbow_l": "Left elbow",
    "elbow_r": "Right elbow", "hip_l": "Left hip (forward)", "hip_r": "Right hip (forward)",
    "hip_out_l": "Left hip (out)", "hip_out_r": "Right hip (out)", "knee_l": "Left knee", "knee_r": "Right knee",
    "spine": "Bend forward", "head_turn": "Head turn",
}
RANGES = {  # the same numbers as SLIDER_RANGES (checked by the tab's test), so building the tab imports no torch
    "yaw": (-180, 180), "arm_raise_l": (0, 180), "arm_raise_r": (0, 180), "arm_forward_l": (-60, 120),
    "arm_forward_r": (-60, 120), "elbow_l": (0, 150), "elbow_r": (0, 150), "hip_l": (-40, 120), "hip_r": (-40, 120),
    "hip_out_l": (-10, 60), "hip_out_r": (-10, 60), "knee_l": (0, 150), "knee_r": (0, 150), "spine": (-30, 60),
    "head_turn": (-70, 70),
}
NEUTRAL = {"yaw": 0, "arm_raise_l": 45, "arm_raise_r": 45, "arm_forward_l": 0, "arm_forward_r": 0, "elbow_l": 5,
           "elbow_r": 5, "hip_l": 0, "hip_r": 0, "hip_out_l": 5, "hip_out_r": 5, "knee_l": 0, "knee_r": 0, "spine": 0,
           "head_turn": 0}
PRESET_NAMES = ["A-pose", "T-pose", "walking", "waving", "sitting", "arms up"]

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


# --- per-session avatars (server side; a few per process) ----------------------------------------
_MAX_SESSIONS = 8
_avatars: OrderedDict[str, object] = OrderedDict()
_photo_sets: dict[str, object] = {}  # per session: the last fitted photos (from_photos.PhotoSet)
_lock = threading.Lock()


def _key(request) -> str:
    return getattr(request, "session_hash", None) or "anonymous"


def _store(request, result) -> None:
    with _lock:
        _avatars[_key(request)] = result
        _avatars.move_to_end(_key(request))
        while len(_avatars) > _MAX_SESSIONS:
            _avatars.popitem(last=False)


def _current(request):
    with _lock:
        result = _avatars.get(_key(request))
    if result is None:
        raise InputError("Reconstruct an avatar first (or it expired: only the last few sessions' avatars are kept).")
    return result


def _pose(values):
    from backends.avatar.pose import Pose

    return Pose(**{name: float(v) for name, v in zip(SLIDERS, values, strict=True)})


PUBLISHED = "lifegom"  # the authors' checkpoint, offered when it and the user's SMPL-X are in the models folder


def default_model() -> str:
    from backends.avatar.models import default_model as chosen

    return chosen()


def model_choices() -> list[tuple[str, str]]:
    from backends.avatar.models import model_ready

    choices = [("Embedded (CPU-sized, trained here; 1–5 views)", EMBEDDED)]
    if model_ready(PUBLISHED):
        choices.append(("LIFe-GoM published checkpoint (THuman2.0; exactly 3 views, SMPL-X)", PUBLISHED))
    return choices


def model_info() -> str:
    from backends.avatar.service import model_ready

    state = "present" if model_ready(EMBEDDED) else "**missing** (train it: `python -m training.avatar_reconstructor`)"
    published = ("present, so it is chosen by default (exactly 3 views at 1024²: minutes on a CPU; choose the "
                 "embedded model for 1–5 views or photos)") if model_ready(PUBLISHED) else \
        "not present (`iclr25-studio models check` says where to put it and SMPL-X)"
    return (f"**Model:** `{EMBEDDED}` ({state}); the authors' `{PUBLISHED}` checkpoint: {published} · "
            "**device:** CPU (torch) · **server renderer:** compiled tile "
            "renderer (numba; gsplat on CUDA) · **browser:** Spark splats, skinned on the GPU")


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
    model_md = gr.Markdown(elem_id="av-model-info")
    with gr.Row():
        with gr.Column(scale=4):
            source = gr.Radio([("Synthetic subject", "synthetic"), ("Photos of a person", "photos"),
                               ("Upload my views", "upload")], value="synthetic", label="Input", elem_id="av-source",
                              info="A held-out synthetic person; 1–5 photos of one person (the body, its mask and "
                                   "the cameras are found for you); or your own views with masks and cameras.")
            with gr.Group(visible=True) as synth_box:
                with gr.Row():
                    subject = gr.Number(0, precision=0, minimum=0, maximum=999_999, label="Subject (held out)",
                                        elem_id="av-subject",
                                        info="Which held-out synthetic person (any number; none was seen in training).")
                    n_views = gr.Slider(1, 5, value=3, step=1, label="Views", elem_id="av-views",
                                        info="How many views of the person the model sees (sparse: 1–5).")
            with gr.Group(visible=False) as photos_box:
                photo_files = gr.File(file_count="multiple", file_types=["image"], elem_id="av-photos",
                                      label="Photos of one person (1–5; the whole body, head to feet, in each)")
                fit_btn = gr.Button("Find the person and fit the body", elem_id="av-fit")
                fit_gallery = gr.Gallery(label="Fit: MediaPipe's skeleton (green), the fitted body's joints (red), "
                                         "the person's mask (blue)", columns=5, height=200, allow_preview=True,
                                         elem_id="av-fit-gallery")
                keep = gr.CheckboxGroup([], label="Photos to reconstruct from", elem_id="av-keep",
                                        info="Untick a photo whose fitted skeleton is wrong; the body is "
                                             "fitted again to the rest when you reconstruct.")
                fit_md = gr.Markdown(elem_id="av-fit-status")
            with gr.Group(visible=False) as upload_box:
                up_images = gr.File(file_count="multiple", file_types=["image"], label="Images (1–5)",
                                    elem_id="av-up-images")
                up_masks = gr.File(file_count="multiple", file_types=["image"], label="Masks (white = person)",
                                   elem_id="av-up-masks")
                up_json = gr.File(file_types=[".json"], label="Cameras and pose (JSON; see the README)",
                                  elem_id="av-up-json")
                example_btn = gr.Button("Make an example upload (this subject's views)", size="sm",
                                        elem_id="av-example")
                example_files = gr.File(label="Example upload", file_count="multiple", elem_id="av-example-files")
            iterations = gr.Slider(1, 5, value=3, step=1, label="Feedback iterations (paper: 3)", elem_id="av-iters",
                                   info="Rounds of iterative feedback refining the avatar: more is sharper and slower.")
            model_dd = gr.Dropdown(model_choices(), value=default_model(), label="Reconstructor", elem_id="av-model",
                                   info="The authors' published checkpoint is offered when it and your SMPL-X file "
                                        "are in the models folder (it takes 1024² inputs: minutes on a CPU).")
            with gr.Row():
                recon_btn = gr.Button("Reconstruct", variant="primary", elem_id="av-reconstruct")
                stop_btn = gr.Button("Stop", variant="stop", elem_id="av-stop")
            inputs_gallery = gr.Gallery(label="What the model saw", columns=5, height=130, allow_preview=False,
                                        elem_id="av-inputs")
            status = gr.Markdown(elem_id="av-status")
        with gr.Column(scale=5):
            gr.HTML(VIEWER_HTML, html_template="${value}", css_template=VIEWER_CSS, js_on_load=_viewer_js(),
                    elem_id="av-viewer", apply_default_css=False)
            preset = gr.Dropdown(PRESET_NAMES, value="A-pose", label="Pose preset", elem_id="av-preset",
                                 info="A ready pose; the sliders below then adjust it.")
            sliders = []
            with gr.Accordion("Pose sliders (degrees)", open=True):
                names = list(SLIDERS)
                for i in range(0, len(names), 3):
                    with gr.Row():
                        for name in names[i:i + 3]:
                            lo, hi = RANGES[name]
                            sliders.append(gr.Slider(lo, hi, value=NEUTRAL[name], step=1, label=SLIDERS[name],
                                                     min_width=120, elem_id=f"av-pose-{name}",
                                                     info="Degrees; the avatar re-poses in the browser as you drag."))
            payload = gr.Textbox(label="avatar data", elem_id="av-payload", elem_classes=["av-hidden"], max_lines=1)
            bones = gr.Textbox(label="pose data", elem_id="av-bones", elem_classes=["av-hidden"], max_lines=1)
        with gr.Column(scale=4):
            with gr.Row():
                azimuth = gr.Slider(-180, 180, value=30, step=5, label="Camera azimuth (°)", elem_id="av-azimuth",
                                    info="Where the camera stands around the person for the rendered view.")
                size = gr.Dropdown([256, 512, 1024], value=512, label="Size (px)", elem_id="av-size",
                                   info="Rendered image size in pixels; larger takes longer.")
            render_btn = gr.Button("Render novel view (server)", elem_id="av-render")
            with gr.Row():
                render_img = gr.Image(label="Render", type="numpy", interactive=False, height=260,
                                      elem_id="av-render-image")
                truth_img = gr.Image(label="Ground truth (synthetic subjects)", type="numpy", interactive=False,
                                     height=260, elem_id="av-truth-image")
            render_md = gr.Markdown(elem_id="av-render-status")
            with gr.Row():
                video_kind = gr.Radio([("Turntable", "turntable"), ("Animation (presets)", "animation")],
                                      value="turntable", label="Video", elem_id="av-video-kind",
                                      info="Turntable: the camera circles the posed person; Animation: the avatar moves through the presets.")
                frames = gr.Slider(8, 120, value=48, step=4, label="Frames", elem_id="av-frames",
                                   info="Frames in the video: more is smoother and takes longer.")
            video_btn = gr.Button("Make video (H.264)", elem_id="av-video-btn")
            video_out = gr.Video(label="Video", elem_id="av-video", height=260)
            export_btn = gr.Button("Export (ply, mesh, avatar)", elem_id="av-export")
            files = gr.File(label="Downloads: 3DGS .ply, posed mesh .obj/.ply, avatar.safetensors, card.json",
                            file_count="multiple", elem_id="av-files")

    # -- handlers ----------------------------------------------------------------------------------
    def _shown_id(bones_v) -> str:
        """The id of the avatar the page's viewer shows, from the pose data it holds ('' when it holds none)."""
        try:
            current = jsontext.loads(bones_v) if bones_v else {}
        except ValueError:
            current = None
        if not isinstance(current, dict):
            raise InputError("The pose data is not the JSON this tab writes (an object with the avatar's id); "
                             "leave it empty.")
        return str(current.get("id", ""))

    def on_source(kind):
        return (gr.update(visible=kind == "synthetic"), gr.update(visible=kind == "photos"),
                gr.update(visible=kind == "upload"))

    @user_errors
    def on_fit(request: gr.Request, paths):
        from backends.avatar.from_photos import prepare
        from backends.avatar.photos import MAX_PHOTOS
        from backends.common.imageio import to_rgb_array

        if not paths:
            raise InputError(f"Upload 1 to {MAX_PHOTOS} photos of one person, the whole body in each.")
        if len(paths) > MAX_PHOTOS:
            raise InputError(f"Upload 1 to {MAX_PHOTOS} photos, not {len(paths)}.")
        images = []
        for p in paths:
            try:
                images.append(to_rgb_array(p))
            except InputError as e:
                raise InputError(f"Photo '{Path(p).name}': {e}") from None
            except Exception:  # noqa: BLE001 — any unreadable upload is the user's to fix
                raise InputError(f"Photo '{Path(p).name}' is not an image this suite can read.") from None
        fitted = prepare(images, [Path(p).name for p in paths])
        with _lock:
            _photo_sets[_key(request)] = fitted
            while len(_photo_sets) > _MAX_SESSIONS:
                _photo_sets.pop(next(iter(_photo_sets)))
        f = fitted.fit
        msg = (f"Fitted one body to {len(fitted.names)} photo(s) in **{f.seconds:.1f} s**: mean distance of the "
               f"fitted joints to MediaPipe's {float(np.nanmean(f.reprojection_px)):.1f} px (256² crops) · body "
               + ", ".join(f"{k} {v:.2f}" for k, v in f.phenotype.as_dict().items())
               + ". Untick a photo whose skeleton is wrong, then **Reconstruct**.")
        return ([(im, n) for im, n in zip(fitted.previews(), fitted.names, strict=True)],
                gr.update(choices=fitted.names, value=fitted.names), msg)

    def _photos_request(request, keep):
        from backends.avatar.from_photos import keep_only

        with _lock:
            fitted = _photo_sets.get(_key(request))
        if fitted is None:
            raise InputError("Upload photos of a person and press 'Find the person and fit the body' first.")
        return keep_only(fitted, list(keep) if keep is not None else fitted.names).upload()

    def _upload_request(images, masks, spec):
        from backends.avatar.uploads import MAX_UPLOAD_VIEWS, parse_upload
        from backends.common.imageio import to_rgb_array

        if not images or not masks or spec is None:
            raise InputError("Upload the images, their masks and the cameras JSON (the README shows its schema).")
        if len(images) > MAX_UPLOAD_VIEWS:
            raise InputError(f"Upload 1 to {MAX_UPLOAD_VIEWS} images, not {len(images)}.")
        try:
            text = Path(spec).read_text()
        except (OSError, UnicodeDecodeError):
            raise InputError("The cameras file is not a readable text file.") from None

        def load(paths, what):
            out = {}
            for p in paths:
                try:
                    out[Path(p).name] = to_rgb_array(p)
                except InputError as e:  # readable but refused (too large, too small): say why
                    raise InputError(f"{what} '{Path(p).name}': {e}") from None
                except Exception:  # noqa: BLE001 — any unreadable upload is the user's to fix
                    raise InputError(f"{what} '{Path(p).name}' is not an image this suite can read.") from None
            return out

        return parse_upload(text, load(images, "Image"), load(masks, "Mask"))

    @user_errors
    def on_reconstruct(request: gr.Request, progress=gr.Progress(), *values):  # noqa: B008 — gradio's idiom
        kind, subject_v, views_v, iters_v, images, masks, spec, *rest = values
        pose_v, model_v = rest[:len(SLIDERS)], (rest[len(SLIDERS):] or [EMBEDDED])[0] or EMBEDDED
        keep_v = rest[len(SLIDERS) + 1] if len(rest) > len(SLIDERS) + 1 else None
        from backends.avatar import service
        from backends.avatar.viewer import avatar_payload, bones_payload

        if model_v not in (EMBEDDED, PUBLISHED):
            raise InputError(f"Unknown reconstructor {model_v!r}: {EMBEDDED!r} or {PUBLISHED!r}.")
        if kind == "upload":
            req = service.ReconstructRequest(subject=None, upload=_upload_request(images, masks, spec),
                                             iterations=int(iters_v), model=model_v)
        elif kind == "photos":
            req = service.ReconstructRequest(subject=None, upload=_photos_request(request, keep_v),
                                             iterations=int(iters_v), model=model_v)
        else:
            req = service.ReconstructRequest(subject=int(subject_v or 0), n_views=int(views_v), iterations=int(iters_v),
                                             model=model_v)
        req.validate()
        token = CANCELS.start(request, "avatar")
        try:
            for _, result in stream(service.reconstruct(req, token), progress):
                _store(request, result)
                data = avatar_payload(result)
                pose = _pose(pose_v)
                msg = (f"**{result.source}** → {result.n_gaussians:,} Gaussians in **{result.seconds:.2f} s** "
                       f"({result.iterations} feedback iteration(s), {len(result.inputs)} view(s)) · model "
                       f"`{result.model}` on `{result.device}`")
                if result.notice:
                    msg += f"\n\n⚠️ {result.notice}"
                yield ([(im, f"view {i}") for i, im in enumerate(result.inputs)], msg, json.dumps(data),
                       json.dumps(bones_payload(result, pose, data["id"])))
        except Cancelled:
            yield gr.update(), "Stopped by the user; the previous avatar (if any) is kept.", gr.update(), gr.update()
        finally:
            CANCELS.finish(request, "avatar", token)

    def on_stop(request: gr.Request) -> str:
        return "Stopping…" if CANCELS.cancel(request, "avatar") else "Nothing is running."

    @user_errors
    def on_pose(request: gr.Request, *values):
        from backends.avatar.viewer import bones_payload

        pose = _pose(values[:-1])  # checks the values even before there is an avatar
        with _lock:
            result = _avatars.get(_key(request))
        if result is None:  # moving sliders before reconstructing is fine: the pose applies to the next avatar
            return gr.update()
        return json.dumps(bones_payload(result, pose, _shown_id(values[-1])))

    @user_errors
    def on_preset(name, bones_v, request: gr.Request):
        from backends.avatar.pose import preset as get_preset
        from backends.avatar.viewer import bones_payload

        pose = get_preset(name)
        values = [getattr(pose, f.name) for f in fields(pose)]
        with _lock:
            result = _avatars.get(_key(request))
        if result is None:
            return *values, gr.update()
        return *values, json.dumps(bones_payload(result, pose, _shown_id(bones_v)))

    @user_errors
    def on_render(request: gr.Request, az, size_v, *pose_v):
        from backends.avatar import service

        result = _current(request)
        r = service.render_novel(result, service.RenderRequest(pose=_pose(pose_v), azimuth_deg=float(az),
                                                               size=int(size_v)))
        msg = (f"{int(size_v)}² in **{r.render_ms:.0f} ms** ({1000 / max(r.render_ms, 1e-3):.1f} FPS, rasterizer "
               f"alone) · {r.renderer} · {result.n_gaussians:,} Gaussians")
        if r.psnr is not None:
            msg += f" · PSNR vs the ray-cast ground truth (person's box): **{r.psnr:.2f} dB**"
        return r.image, r.ground_truth, msg

    @user_errors
    def on_video(request: gr.Request, progress=gr.Progress(), *values):  # noqa: B008 — gradio's idiom
        kind, n_frames, *pose_v = values
        from backends.avatar import service

        result = _current(request)
        req = service.VideoRequest(kind=kind, pose=_pose(pose_v), frames=int(n_frames), size=256)
        token = CANCELS.start(request, "avatar")
        try:
            for _, v in stream(service.video(result, req, new_output_dir("avatar"), token), progress):
                yield str(v.path)
        except Cancelled:
            gr.Info("Stopped by the user; no video was made (the one shown before, if any, stays).")
            yield gr.update()
        finally:
            CANCELS.finish(request, "avatar", token)

    @user_errors
    def on_export(request: gr.Request, *pose_v):
        from backends.avatar.outputs import write_avatar

        paths = write_avatar(_current(request), _pose(pose_v), new_output_dir("avatar"))
        return [str(paths[k]) for k in ("gaussians", "mesh_obj", "mesh_ply", "avatar", "card")]

    @user_errors
    def on_example(subject_v, views_v):
        from backends.avatar.outputs import write_example

        paths = write_example(int(subject_v or 0), int(views_v), 128, new_output_dir("avatar-example"))
        return [str(p) for p in paths.values()]

    source.change(on_source, inputs=source, outputs=[synth_box, photos_box, upload_box], api_visibility="private",
                  queue=False)
    listen(fit_btn.click, on_fit, status=fit_md, inputs=photo_files, outputs=[fit_gallery, keep, fit_md],
           api_name="avatar_fit_photos", concurrency_id="gpu")
    # Progress and errors show on a status line; a failed action changes nothing else (the avatar, what
    # the model saw, the renders stay)
    listen(recon_btn.click, on_reconstruct, status=status,
           inputs=[source, subject, n_views, iterations, up_images, up_masks, up_json, *sliders, model_dd, keep],
           outputs=[inputs_gallery, status, payload, bones], api_name="avatar_reconstruct", concurrency_id="gpu")
    stop_btn.click(on_stop, outputs=status, api_name="avatar_stop", queue=False)
    for s in sliders:
        s.input(on_pose, inputs=[*sliders, bones], outputs=bones, api_name=False, show_progress="hidden",
                trigger_mode="always_last", concurrency_id="avatar-pose", concurrency_limit=4)
    demo.load(model_info, outputs=model_md, api_visibility="private")
    demo.load(lambda: gr.update(choices=model_choices(), value=default_model()), outputs=model_dd,
              api_visibility="private")
    pose_api = gr.Button(visible=False)
    pose_api.click(on_pose, inputs=[*sliders, bones], outputs=bones, api_name="avatar_pose",
                   concurrency_id="avatar-pose")
    preset.input(on_preset, inputs=[preset, bones], outputs=[*sliders, bones], api_name="avatar_preset",
                 show_progress="hidden", concurrency_id="avatar-pose")
    listen(render_btn.click, on_render, status=render_md, inputs=[azimuth, size, *sliders],
           outputs=[render_img, truth_img, render_md], api_name="avatar_render", concurrency_id="avatar-render",
           concurrency_limit=2)
    listen(video_btn.click, on_video, status=render_md, progress_on=[video_out], inputs=[video_kind, frames, *sliders],
           outputs=video_out, api_name="avatar_video", concurrency_id="gpu")
    listen(export_btn.click, on_export, status=render_md, inputs=sliders, outputs=files, api_name="avatar_export",
           concurrency_id="avatar-render")
    listen(example_btn.click, on_example, status=status, inputs=[subject, n_views], outputs=example_files,
           api_name="avatar_example", concurrency_id="avatar-render")


TAB = TabSpec(name="avatar", title="Avatar", build=build)
