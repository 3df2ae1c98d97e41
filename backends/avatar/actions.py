"""The Avatar capability's actions (``backends.common.action``): what the tab's buttons, the API, the CLI and
a Ray worker run, and what a run card replays. Torch-free to import (the services load inside).

- ``avatar_reconstruct``: views (a synthetic subject, an upload, or photos fitted by ``avatar_fit_photos``)
  → an avatar, by the embedded reconstructor or the published LIFe-GoM; its files (avatar.safetensors,
  3DGS .ply, posed meshes, the views the model saw);
- ``avatar_fit_photos``: photos of a person → MediaPipe's body and mask in each and one body fitted to
  all (the views a reconstruction from photos takes); each photo with its fit drawn on it;
- ``avatar_video``: a turntable or animation of a saved avatar (its avatar.safetensors) as H.264;
- ``avatar_render``: a novel view of a saved avatar in a pose (render.png; ground_truth.png beside it for
  synthetic subjects), light: it never waits behind a reconstruction;
- ``avatar_export``: a saved avatar's raw files in a pose (3DGS .ply, posed mesh .obj/.ply, avatar.safetensors);
- ``avatar_example``: an upload example of a synthetic subject (images, masks, cameras.json).

Every action's work checks its CancelToken between its steps (Stop), and a run card replays each of them.
"""

from __future__ import annotations

from backends.common.action import Action
from backends.common.errors import InputError
from backends.common.progress import ProgressEvent

from .requests import (
    ExampleRequest,
    ExportRequest,
    PhotosRequest,
    ReconstructRequest,
    RenderRequest,
    VideoRequest,
)


def _load_reconstructor(request: ReconstructRequest):
    from .service import load_model

    return load_model(request.model, request.levels, request.models_dir)


def _reconstruct(request: ReconstructRequest, model, cancel):
    from .service import reconstruct

    return reconstruct(request, cancel, model)


def _write_avatar(result, folder):
    from .outputs import write_avatar

    return write_avatar(result, result.pose or result.input_pose, folder)


RECONSTRUCT = Action(
    name="avatar_reconstruct", capability="avatar", request_type=ReconstructRequest, load=_load_reconstructor,
    work=_reconstruct, write=_write_avatar, summary=lambda result: result.card(),
    description="LIFe-GoM: a few views of a person → an animatable Gaussians-on-Mesh avatar.")


def _fit_photos(request: PhotosRequest, model, cancel):
    from .from_photos import prepare

    yield ProgressEvent(0.05, f"finding the person in {len(request.photos)} photo(s) and fitting the body")
    if cancel is not None:
        cancel.raise_if_cancelled()
    fitted = prepare(request.photos, list(request.names), fov_deg=float(request.fov_deg), steps=request.steps)
    yield ProgressEvent(1.0, f"fitted in {fitted.fit.seconds:.1f} s")
    yield fitted


def _write_fit(fitted, folder):
    from .outputs import write_photo_fit

    return write_photo_fit(fitted, folder)


FIT_PHOTOS = Action(
    name="avatar_fit_photos", capability="avatar", request_type=PhotosRequest, work=_fit_photos,
    write=_write_fit, summary=lambda fitted: fitted.card(),
    description="Photos of one person → MediaPipe's skeleton and mask in each, one body (pose, shape, cameras) "
                "fitted to all.")


def _load_avatar(request: VideoRequest | RenderRequest | ExportRequest):
    """The saved avatar a request names (its avatar.safetensors): about 60 ms, so it is read per request."""
    from .outputs import load_avatar

    if request.avatar is None:
        raise InputError("This needs an avatar: the avatar.safetensors a reconstruction wrote.")
    return load_avatar(request.avatar)


def _video(request: VideoRequest, avatar, cancel):
    from .service import video

    if request.out is None:
        raise InputError("A video needs a folder to be written to.")
    return video(avatar, request, request.out, cancel)


VIDEO = Action(
    name="avatar_video", capability="avatar", request_type=VideoRequest, load=_load_avatar, work=_video,
    write=lambda result, folder: {"video": result.path}, summary=lambda result: result.card(),
    output_fields=("out",), description="A turntable or an animation of an avatar, as H.264 video.")



def _render(request: RenderRequest, avatar, cancel):
    from .service import render_novel

    yield ProgressEvent(0.1, f"rendering {request.size}² at {request.azimuth_deg:g}°")
    result = render_novel(avatar, request, cancel)
    yield ProgressEvent(1.0, f"rendered in {result.render_ms:.0f} ms")
    yield result


def _write_render(result, folder):
    from pathlib import Path

    from backends.common.imageio import save_png

    paths = {"render": save_png(result.image, Path(folder) / "render.png")}
    if result.ground_truth is not None:
        paths["ground_truth"] = save_png(result.ground_truth, Path(folder) / "ground_truth.png")
    return paths


def _render_card(result) -> dict:
    return {"renderer": result.renderer, "render_ms": round(result.render_ms, 1),
            "psnr": None if result.psnr is None else round(result.psnr, 3)}


RENDER = Action(
    name="avatar_render", capability="avatar", request_type=RenderRequest, load=_load_avatar, work=_render,
    write=_write_render, summary=_render_card, heavy=False,
    description="A novel view of the avatar in a pose from an orbit camera, with the ray-cast ground truth beside it "
                "for synthetic subjects.")


def _export(request: ExportRequest, avatar, cancel):
    from .outputs import pose_avatar

    yield ProgressEvent(0.1, "posing the avatar's Gaussians and mesh")
    if cancel is not None:
        cancel.raise_if_cancelled()
    posed = pose_avatar(avatar, request.pose)
    if cancel is not None:
        cancel.raise_if_cancelled()
    yield ProgressEvent(0.6, "writing the files")
    yield posed


def _write_posed(posed, folder):
    from .outputs import write_posed

    return write_posed(posed, folder)


EXPORT = Action(
    name="avatar_export", capability="avatar", request_type=ExportRequest, load=_load_avatar, work=_export,
    write=_write_posed, summary=lambda posed: posed.card(), heavy=False,
    description="The avatar's raw files in a pose: 3DGS .ply, posed mesh (.obj, .ply) and avatar.safetensors.")


def _example(request: ExampleRequest, model, cancel):
    from .outputs import make_example

    yield ProgressEvent(0.05, f"ray-casting {request.n_views} view(s) of synthetic subject {request.subject}")
    yield make_example(request, cancel)


def _write_example(example, folder):
    from .outputs import write_example_files

    return write_example_files(example, folder)


EXAMPLE = Action(
    name="avatar_example", capability="avatar", request_type=ExampleRequest, work=_example, write=_write_example,
    summary=lambda example: example.card(), heavy=False,
    description="An upload example: ray-cast views of a synthetic subject, their masks and cameras.json (the files "
                "'Upload my views' takes).")

ACTIONS = (RECONSTRUCT, FIT_PHOTOS, VIDEO, RENDER, EXPORT, EXAMPLE)
