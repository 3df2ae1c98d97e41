"""A user's own views of a person: images, masks and one JSON file with the cameras and the pose.

The JSON schema (version 1; the README shows it with an example, ``write_example`` writes one)::

    {
      "version": 1,
      "pose": {"arm_raise_l": 45, ...},          # the person's pose in every view: pose sliders in degrees
                                                 #   (backends.avatar.pose.SLIDER_RANGES); or "preset": "A-pose"
      "body": {"gender": 0.5, "height": 0.6},    # optional anny shape parameters in [0, 1] (default 0.5)
      "views": [                                 # 1 to 5 views
        {"image": "view0.png", "mask": "view0_mask.png",
         "K": [[fx, 0, cx], [0, fy, cy], [0, 0, 1]],          # pixels, pixel centres at +0.5
         "world_to_camera": [[r, r, r, t], ..., [0, 0, 0, 1]]}  # OpenCV: x right, y down, z forward
      ]
    }

World frame: metres, z up, the body's rest pose standing at the origin and facing -y (anny's frame).
Images and masks are matched to the views by file name; a mask is white on the person.

Also what the tab and the CLI read from files: the views with their cameras file (``read_views``, or
``read_views_beside`` a cameras file), photos of a person (``read_photos``), each unreadable file named.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from backends.common import jsontext
from backends.common.errors import InputError

from .params import PHENOTYPES, Phenotype, Pose, preset
from .requests import DEFAULT_FOV, MAX_PHOTOS, PhotosRequest, UploadedViews

MAX_UPLOAD_VIEWS = 5
MIN_SIDE, MAX_SIDE = 32, 2048
SCHEMA_VERSION = 1


def parse_spec(text: str) -> dict:
    """The JSON text as a dict, or an InputError that says where it is broken."""
    try:
        spec = jsontext.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"The cameras file is not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}).") from None
    if not isinstance(spec, dict):
        raise InputError("The cameras file must hold a JSON object with a 'views' list.")
    if spec.get("version", SCHEMA_VERSION) != SCHEMA_VERSION:
        raise InputError(f"The cameras file is version {spec.get('version')!r}; this suite reads version 1.")
    views = spec.get("views")
    if not isinstance(views, list) or not views:
        raise InputError("The cameras file needs a non-empty 'views' list (one entry per image).")
    if len(views) > MAX_UPLOAD_VIEWS:
        raise InputError(f"The cameras file lists {len(views)} views; the avatar takes 1 to {MAX_UPLOAD_VIEWS}.")
    return spec


def _matrix(value, shape: tuple[int, int], where: str) -> np.ndarray:
    try:
        m = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{where} must be a {shape[0]}×{shape[1]} matrix of numbers.") from None
    if m.shape != shape or not np.isfinite(m).all():
        raise InputError(f"{where} must be a {shape[0]}×{shape[1]} matrix of finite numbers, "
                         f"not one of shape {'×'.join(map(str, m.shape)) or 'scalar'}.")
    return m


def _camera(view: dict, i: int) -> tuple[np.ndarray, np.ndarray]:
    for key in ("image", "mask", "K", "world_to_camera"):
        if key not in view:
            raise InputError(f"views[{i}] has no '{key}'.")
    k = _matrix(view["K"], (3, 3), f"views[{i}].K")
    if k[0, 0] <= 0 or k[1, 1] <= 0 or not np.allclose(k[2], [0, 0, 1]) or k[1, 0] != 0:
        raise InputError(f"views[{i}].K must be [[fx, 0, cx], [0, fy, cy], [0, 0, 1]] with fx, fy > 0.")
    e = _matrix(view["world_to_camera"], (4, 4), f"views[{i}].world_to_camera")
    r = e[:3, :3]
    if not np.allclose(e[3], [0, 0, 0, 1]) or not np.allclose(r @ r.T, np.eye(3), atol=1e-3) \
            or np.linalg.det(r) < 0:
        raise InputError(f"views[{i}].world_to_camera must be a rigid transform (a rotation and a translation, "
                         "last row 0 0 0 1).")
    return e, k


def _pose(spec: dict) -> Pose:
    if "preset" in spec and "pose" in spec:
        raise InputError("Give either 'pose' or 'preset' in the cameras file, not both.")
    if "preset" in spec:
        return preset(str(spec["preset"]))
    values = spec.get("pose", {})
    if not isinstance(values, dict):
        raise InputError("'pose' must be an object of pose sliders in degrees, e.g. {\"arm_raise_l\": 45}.")
    return Pose.from_dict(values)


def _phenotype(spec: dict) -> Phenotype:
    values = spec.get("body", {})
    if not isinstance(values, dict) or set(values) - set(PHENOTYPES):
        raise InputError(f"'body' must be an object with some of {', '.join(PHENOTYPES)} (each 0..1).")
    try:
        return Phenotype(**{k: float(v) for k, v in values.items()})
    except (TypeError, ValueError):
        raise InputError(f"'body' values must be numbers between 0 and 1 (keys: {', '.join(PHENOTYPES)}).") from None


def checked_rgb(image, what: str, sides: tuple[int, int] = (MIN_SIDE, MAX_SIDE), kind: str = "images") -> np.ndarray:
    """An uploaded image as H×W×3 (alpha dropped, grey repeated; its dtype kept), or an InputError saying what
    is wrong with it (``what`` names it; ``sides``: the smallest and largest side allowed to such ``kind``)."""
    a = np.asarray(image)
    if a.ndim == 3 and a.shape[2] == 4:
        a = a[..., :3]
    if a.ndim == 2:
        a = np.repeat(a[..., None], 3, 2)
    if a.ndim != 3 or a.shape[2] != 3:
        raise InputError(f"{what} is not an RGB image.")
    h, w = a.shape[:2]
    lo, hi = sides
    if not (lo <= h <= hi and lo <= w <= hi):
        raise InputError(f"{what} is {w}×{h}; {kind} must be {lo} to {hi} pixels on each side.")
    return a


def _as_float_image(img, what: str) -> np.ndarray:
    a = checked_rgb(img, what)
    return a.astype(np.float32) / (255.0 if a.dtype == np.uint8 else 1.0)


def parse_upload(spec_text: str, images: dict[str, np.ndarray], masks: dict[str, np.ndarray]) -> UploadedViews:
    """Check and pair the uploads: ``images``/``masks`` map file names (no folders) to arrays."""
    spec = parse_spec(spec_text)
    views = spec["views"]
    if len(images) != len(views) or len(masks) != len(views):
        raise InputError(f"The cameras file lists {len(views)} view(s), but {len(images)} image(s) and "
                         f"{len(masks)} mask(s) were uploaded; give one image and one mask per view.")
    pose, phenotype = _pose(spec), _phenotype(spec)
    out_i, out_m, out_e, out_k, names = [], [], [], [], []
    for i, view in enumerate(views):
        if not isinstance(view, dict):
            raise InputError(f"views[{i}] must be an object with image, mask, K and world_to_camera.")
        e, k = _camera(view, i)
        name, mask_name = Path(str(view["image"])).name, Path(str(view["mask"])).name
        if name not in images:
            raise InputError(f"views[{i}].image '{name}' is not among the uploaded images "
                             f"({', '.join(sorted(images))}).")
        if mask_name not in masks:
            raise InputError(f"views[{i}].mask '{mask_name}' is not among the uploaded masks "
                             f"({', '.join(sorted(masks))}).")
        img = _as_float_image(images[name], f"Image '{name}'")
        mask = _as_float_image(masks[mask_name], f"Mask '{mask_name}'").mean(-1)
        if mask.shape != img.shape[:2]:
            raise InputError(f"Mask '{mask_name}' is {mask.shape[1]}×{mask.shape[0]} but its image '{name}' is "
                             f"{img.shape[1]}×{img.shape[0]}; a mask must match its image's size.")
        mask = (mask > 0.5).astype(np.float32)
        if mask.mean() < 0.005:
            raise InputError(f"Mask '{mask_name}' is (almost) empty; it must be white on the person.")
        out_i.append(img)
        out_m.append(mask)
        out_e.append(e)
        out_k.append(k)
        names.append(name)
    sizes = {a.shape[:2] for a in out_i}
    if len(sizes) > 1:
        raise InputError("All images must have the same size; got " + ", ".join(f"{w}×{h}" for h, w in sorted(sizes)) + ".")
    return UploadedViews(np.stack(out_i), np.stack(out_m), np.stack(out_e), np.stack(out_k), pose, phenotype, names)


def resize_views(views: UploadedViews, size: int) -> UploadedViews:
    """The views at ``size``×``size`` (the model's input size); K is scaled with the image."""
    import torch
    import torch.nn.functional as F

    n, h, w, _ = views.images.shape
    if (h, w) == (size, size):
        return views
    img = torch.from_numpy(views.images).permute(0, 3, 1, 2)
    msk = torch.from_numpy(views.masks)[:, None]
    img = F.interpolate(img, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
    msk = F.interpolate(msk, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
    ks = views.Ks.copy()
    ks[:, 0] *= size / w
    ks[:, 1] *= size / h
    return UploadedViews(img.permute(0, 2, 3, 1).clamp(0, 1).numpy(), (msk[:, 0] > 0.5).float().numpy(),
                         views.viewmats, ks, views.pose, views.phenotype, views.names)


def example_spec(viewmats, Ks, pose: Pose, phenotype: Phenotype, names: list[str]) -> dict:
    """The cameras file for these views (what ``write_example`` and the tab's example download hold)."""
    return {
        "version": SCHEMA_VERSION,
        "pose": pose.as_dict(),
        "body": phenotype.as_dict(),
        "views": [{"image": f"{n}.png", "mask": f"{n}_mask.png",
                   "K": np.round(np.asarray(k, np.float64), 6).tolist(),
                   "world_to_camera": np.round(np.asarray(e, np.float64), 6).tolist()}
                  for n, e, k in zip(names, viewmats, Ks, strict=True)],
    }


# --- reading the files a person hands over (the tab's uploads, the CLI's arguments) ----------------

def read_image(path, what: str) -> np.ndarray:
    """One uploaded file as H×W×3 uint8; an InputError naming the file (``what`` says what it is for)."""
    from backends.common.imageio import to_rgb_array

    name = Path(str(path)).name
    if not Path(str(path)).is_file():
        raise InputError(f"{what} '{name}' was not found.")
    try:
        return to_rgb_array(str(path))
    except InputError as e:  # readable but refused (too large, too small): say why
        raise InputError(f"{what} '{name}': {e}") from None
    except Exception:  # noqa: BLE001 — any unreadable upload is the user's to fix
        raise InputError(f"{what} '{name}' is not an image this suite can read.") from None


def _read_text(path, what: str) -> str:
    try:
        return Path(str(path)).read_text()
    except (OSError, UnicodeDecodeError):
        raise InputError(f"The {what} {Path(str(path)).name} is not a readable text file.") from None


def read_views(images: list | None, masks: list | None, cameras) -> UploadedViews:
    """The tab's upload: image files, their mask files and the cameras file (paths), checked and paired."""
    if not images or not masks or cameras is None:
        raise InputError("Upload the images, their masks and the cameras JSON (the README shows its schema).")
    if len(images) > MAX_UPLOAD_VIEWS:
        raise InputError(f"Upload 1 to {MAX_UPLOAD_VIEWS} images, not {len(images)}.")
    text = _read_text(cameras, "cameras file")
    return parse_upload(text, {Path(str(p)).name: read_image(p, "Image") for p in images},
                        {Path(str(p)).name: read_image(p, "Mask") for p in masks})


def read_views_beside(cameras: Path) -> UploadedViews:
    """A cameras file and the images and masks it names, which lie beside it (the CLI's ``--upload``)."""
    cameras = Path(cameras)
    text = _read_text(cameras, "cameras file")
    spec = parse_spec(text)
    images, masks = {}, {}
    for i, view in enumerate(spec["views"]):
        for key, store in (("image", images), ("mask", masks)):
            name = Path(str(view.get(key, "") if isinstance(view, dict) else "")).name
            if not name or not (cameras.parent / name).is_file():
                raise InputError(f"views[{i}].{key} '{name}' was not found beside {cameras.name}.")
            store[name] = read_image(cameras.parent / name, key.capitalize())
    return parse_upload(text, images, masks)


def read_photos(paths: list | None, fov_deg: float = DEFAULT_FOV) -> PhotosRequest:
    """Photo files of one person → the fit's request (each photo named by its file name)."""
    if not paths:
        raise InputError(f"Upload 1 to {MAX_PHOTOS} photos of one person, the whole body in each.")
    if len(paths) > MAX_PHOTOS:
        raise InputError(f"Upload 1 to {MAX_PHOTOS} photos, not {len(paths)}.")
    return PhotosRequest([read_image(p, "Photo") for p in paths], [Path(str(p)).name for p in paths],
                         fov_deg=float(fov_deg))


def shown_avatar_id(pose_data: str | None) -> str:
    """The id of the avatar a page's viewer shows, from the pose data it holds ('' when it holds none)."""
    try:
        current = jsontext.loads(pose_data) if pose_data else {}
    except ValueError:
        current = None
    if not isinstance(current, dict):
        raise InputError("The pose data is not the JSON this tab writes (an object with the avatar's id); "
                         "leave it empty.")
    return str(current.get("id", ""))
