"""The Avatar capability's actions (``backends.common.action``): what the tab's buttons, the API, the CLI and
a Ray worker run, and what a run card replays. Torch-free to import (the services load inside).

- ``avatar_reconstruct``: views (a synthetic subject, an upload, or photos fitted by ``avatar_fit_photos``)
  → an avatar, by the embedded reconstructor or the published LIFe-GoM; its files (avatar.safetensors,
  3DGS .ply, posed meshes, the views the model saw);
- ``avatar_fit_photos``: photos of a person → MediaPipe's body and mask in each and one body fitted to
  all (the views a reconstruction from photos takes); each photo with its fit drawn on it;
- ``avatar_video``: a turntable or animation of a saved avatar (its avatar.safetensors) as H.264.
"""

from __future__ import annotations

from backends.common.action import Action
from backends.common.errors import InputError
from backends.common.progress import ProgressEvent

from .requests import PhotosRequest, ReconstructRequest, VideoRequest


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


def _load_avatar(request: VideoRequest):
    from .outputs import load_avatar

    if request.avatar is None:
        raise InputError("A video needs an avatar: the avatar.safetensors a reconstruction wrote.")
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

ACTIONS = (RECONSTRUCT, FIT_PHOTOS, VIDEO)
