"""Raw outputs of an avatar, written the same way by the tab and the CLI, and read back.

- ``gaussians.ply``: the posed Gaussians in the standard 3DGS layout (x y z nx ny nz f_dc_0..2
  f_rest_0..44 (zeros) opacity scale_0..2 rot_0..3) — opens in common splat viewers;
- ``mesh.obj`` / ``mesh.ply``: the posed rendering mesh with per-vertex colours (the OBJ's header names
  the pose);
- ``avatar.safetensors``: everything to reload and re-pose the avatar (coarse mesh, skinning weights,
  per-face Gaussian parameters, the skeleton), with its card as metadata;
- ``input_N.png``: the views the model saw. How the avatar was made is its run's card, ``run.json``
  (``Action.write_run``); an export in another pose (``avatar_export``) has a card of its own, which names
  the avatar's making (the avatar's own card) and replays to the same files;
- ``write_example``: an upload example (images, masks and the cameras JSON) from a synthetic subject.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from backends.common import files
from backends.common.errors import InputError
from backends.common.imageio import save_png
from backends.common.progress import CancelToken

from .body import Phenotype
from .gom import FaceParams, GoMAvatar, Subdivision, subdivide
from .pose import Pose
from .requests import ExampleRequest
from .service import AvatarResult, Skeleton

FORMAT = "iclr25-studio avatar v1"


def face_colours(avatar: GoMAvatar) -> np.ndarray:
    return avatar.params.rgb.detach().clamp(0, 1).cpu().numpy()


def vertex_colours(avatar: GoMAvatar) -> np.ndarray:
    """Each fine vertex's colour: the mean of its faces' Gaussian colours (Vf×3 in [0, 1])."""
    faces = avatar.subdivision.faces
    rgb = face_colours(avatar)
    total = np.zeros((avatar.subdivision.n_fine_vertices, 3))
    count = np.zeros(avatar.subdivision.n_fine_vertices)
    for k in range(3):
        np.add.at(total, faces[:, k], rgb)
        np.add.at(count, faces[:, k], 1)
    return (total / np.maximum(count, 1)[:, None]).astype(np.float32)


def posed_mesh(result: AvatarResult, pose: Pose) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(vertices Vf×3, faces F×3, colours Vf×3) of the rendering mesh in ``pose``."""
    with torch.no_grad():
        v = result.avatar.posed_fine_vertices(result.skeleton.transforms(pose)).cpu().numpy()
    return v.astype(np.float32), result.avatar.subdivision.faces, vertex_colours(result.avatar)


def obj_text(vertices: np.ndarray, faces: np.ndarray, colours: np.ndarray, pose: Pose | None = None) -> str:
    """Wavefront OBJ with per-vertex colours (the common ``v x y z r g b`` extension); ``pose`` in a comment."""
    lines = ["# LIFe-GoM avatar mesh (iclr25-studio); metres, z up"]
    if pose is not None:
        lines.append(f"# pose (degrees): {json.dumps(pose.as_dict())}")
    lines += [f"v {x:.5f} {y:.5f} {z:.5f} {r:.4f} {g:.4f} {b:.4f}" for (x, y, z), (r, g, b) in zip(vertices, colours, strict=True)]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in faces]
    return "\n".join(lines) + "\n"


def mesh_ply_bytes(vertices: np.ndarray, faces: np.ndarray, colours: np.ndarray) -> bytes:
    header = ("ply\nformat binary_little_endian 1.0\n"
              f"element vertex {len(vertices)}\nproperty float x\nproperty float y\nproperty float z\n"
              "property uchar red\nproperty uchar green\nproperty uchar blue\n"
              f"element face {len(faces)}\nproperty list uchar int vertex_indices\nend_header\n")
    vert = np.zeros(len(vertices), dtype=[("p", "<f4", 3), ("c", "u1", 3)])
    vert["p"] = vertices
    vert["c"] = np.clip(np.round(colours * 255), 0, 255)
    face = np.zeros(len(faces), dtype=[("n", "u1"), ("i", "<i4", 3)])
    face["n"] = 3
    face["i"] = faces
    return header.encode("ascii") + vert.tobytes() + face.tobytes()


def _is_own_subdivision(sub: Subdivision, n_coarse: int) -> bool:
    """True when ``gom.subdivide`` rebuilds exactly this subdivision from the coarse faces (then only those are saved)."""
    again = subdivide(sub.coarse_faces, n_coarse, sub.levels)
    return np.array_equal(again.faces, sub.faces) and np.array_equal(again.indices, sub.indices)


def save_avatar(result: AvatarResult, path: Path) -> Path:
    from safetensors.torch import save_file

    a, s = result.avatar, result.skeleton
    tensors = {
        "coarse_xyz": a.coarse_xyz, "lbs_weights": a.lbs_weights,
        "coarse_faces": torch.tensor(np.asarray(a.subdivision.coarse_faces, np.int64)),
        "rgb": a.params.rgb, "so3": a.params.so3, "scale": a.params.scale, "offset": a.params.offset,
        "bone_heads": torch.tensor(np.asarray(s.heads, np.float64)),
        "bone_parents": torch.tensor(s.parents, dtype=torch.int64),
    }
    if not _is_own_subdivision(a.subdivision, len(a.coarse_xyz)):  # e.g. the published LIFe-GoM's face order: keep it as it is
        sub = a.subdivision
        tensors.update({"fine_faces": torch.from_numpy(np.asarray(sub.faces, np.int64)),
                        "fine_indices": torch.from_numpy(np.asarray(sub.indices, np.int64)),
                        "fine_weights": torch.from_numpy(np.asarray(sub.weights, np.float32)),
                        "fine_parent": torch.from_numpy(np.asarray(sub.parent, np.int64))})
    meta = {"format": FORMAT, "levels": str(a.subdivision.levels), "bone_labels": json.dumps(s.labels),
            "pixel_size": repr(float(result.pixel_size)),
            "card": json.dumps(result.card())}
    with files.atomic_path(path) as tmp:
        save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, str(tmp), metadata=meta)
    return Path(path)


def load_avatar(path: str | Path) -> AvatarResult:
    """An ``avatar.safetensors`` back into an AvatarResult (re-posable and renderable; no input views)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), "pt") as f:
            meta = f.metadata() or {}
            t = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 — safe_open has no items()
    except (SafetensorError, OSError, ValueError):
        raise InputError("That file is not an avatar (.safetensors) this suite wrote.") from None
    if meta.get("format") != FORMAT:
        raise InputError("That .safetensors file is not an avatar of this suite (no avatar format tag).")
    try:
        card = json.loads(meta["card"])
        levels = int(meta["levels"])
        labels = json.loads(meta["bone_labels"])
        faces = t["coarse_faces"].numpy()
        if "fine_faces" in t:
            sub = Subdivision(faces, t["fine_faces"].numpy(), t["fine_indices"].numpy(), t["fine_weights"].numpy(),
                              t["fine_parent"].numpy(), levels)
        else:
            sub = subdivide(faces, len(t["coarse_xyz"]), levels)
        avatar = GoMAvatar(t["coarse_xyz"], t["lbs_weights"], sub, FaceParams(t["rgb"], t["so3"], t["scale"], t["offset"]))
        skeleton = Skeleton(t["bone_heads"].numpy(), [int(p) for p in t["bone_parents"]], labels)
        pose = Pose.from_dict(card["input_pose"])
        phenotype = Phenotype(**card["body"])
    except (KeyError, ValueError, TypeError, json.JSONDecodeError):
        raise InputError("That avatar file is incomplete or damaged.") from None
    if len(avatar.params.rgb) != len(sub.faces):
        raise InputError("That avatar file is damaged: its Gaussians do not match its mesh.")
    return AvatarResult(avatar, skeleton, phenotype, pose, [], float(card.get("reconstruction_s", 0.0)),
                        int(card.get("iterations", 0)), str(card.get("model", "?")), str(card.get("device", "?")),
                        str(card.get("source", "a saved avatar")), card.get("subject_seed"),
                        pixel_size=float(meta.get("pixel_size", card.get("pixel_size_m", 0.0))))


@dataclass
class PosedAvatar:
    """An avatar posed for its raw files (what an export writes): the posed Gaussians and rendering mesh."""

    result: AvatarResult
    pose: Pose
    gaussians: object  # gom.Gaussians in ``pose`` (the training low-pass in world units)
    mesh: tuple[np.ndarray, np.ndarray, np.ndarray]  # posed_mesh(result, pose)

    def card(self) -> dict:
        """The pose it is in and the card of the avatar (how it was made)."""
        return {"pose": self.pose.as_dict(), "gaussians": self.result.n_gaussians, "avatar": self.result.card()}

    def describe(self) -> str:
        return (f"Exported {self.result.n_gaussians:,} Gaussians and the posed mesh "
                f"({len(self.mesh[0]):,} vertices) of the avatar from {self.result.source}")


def pose_avatar(result: AvatarResult, pose: Pose) -> PosedAvatar:
    """The avatar's Gaussians and rendering mesh in ``pose``."""
    return PosedAvatar(result, pose, result.gaussians(pose), posed_mesh(result, pose))


def write_posed(posed: PosedAvatar, out_dir: str | Path) -> dict[str, Path]:
    """A posed avatar's files into ``out_dir``: gaussians.ply, mesh.obj, mesh.ply and avatar.safetensors."""
    from .export import ply_bytes

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"gaussians": out / "gaussians.ply", "mesh_obj": out / "mesh.obj", "mesh_ply": out / "mesh.ply",
             "avatar": out / "avatar.safetensors"}
    files.write_bytes(paths["gaussians"], ply_bytes(posed.gaussians))
    v, f, c = posed.mesh
    files.write_text(paths["mesh_obj"], obj_text(v, f, c, posed.pose))
    files.write_bytes(paths["mesh_ply"], mesh_ply_bytes(v, f, c))
    save_avatar(posed.result, paths["avatar"])
    return paths


def write_avatar(result: AvatarResult, pose: Pose, out_dir: str | Path) -> dict[str, Path]:
    """All raw outputs of an avatar in ``pose`` into ``out_dir`` (its posed files and the views the model saw);
    returns their paths by kind. The run card is not among them: a run writes it (``Action.write_run``)."""
    out = Path(out_dir)
    paths = write_posed(pose_avatar(result, pose), out)
    for i, image in enumerate(result.inputs):
        paths[f"input_{i}"] = save_png(image, out / f"input_{i}.png")
    return paths


@dataclass
class ExampleViews:
    """An upload example of a synthetic subject: its ray-cast views and masks (uint8) and their cameras spec."""

    subject: int
    names: list[str]
    images: list[np.ndarray]
    masks: list[np.ndarray]
    cameras: dict  # the cameras.json the upload takes (uploads.example_spec)

    def card(self) -> dict:
        return {"subject": self.subject, "views": len(self.names), "size": int(self.images[0].shape[0])}

    def describe(self) -> str:
        return (f"An upload example of synthetic subject {self.subject}: {len(self.names)} view(s), their masks and "
                "cameras.json")


def make_example(request: ExampleRequest, cancel: CancelToken | None = None) -> ExampleViews:
    """Ray-cast ``request.n_views`` views of synthetic subject ``request.subject`` (``cancel`` stops it between
    views) and the cameras JSON of an upload of them."""
    from backends.common.params import check_request

    from .data import sample_subject
    from .service import SUBJECT_SEED0
    from .uploads import example_spec

    check_request(request)
    sample = sample_subject(SUBJECT_SEED0 + request.subject, request.n_views, request.size, cancel=cancel)
    names = [f"view{i}" for i in range(request.n_views)]
    spec = example_spec([v.camera.extrinsics for v in sample.views], [v.camera.intrinsics for v in sample.views],
                        sample.views[0].pose, sample.subject.phenotype, names)
    return ExampleViews(request.subject, names, [np.round(v.rgb * 255).astype(np.uint8) for v in sample.views],
                        [(v.mask > 0.5).astype(np.uint8) * 255 for v in sample.views], spec)


def write_example_files(example: ExampleViews, out_dir: str | Path) -> dict[str, Path]:
    """The example's images, masks and cameras.json: the files the tab's upload and ``avatar reconstruct
    --upload`` take."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for name, image, mask in zip(example.names, example.images, example.masks, strict=True):
        paths[name] = save_png(image, out / f"{name}.png")
        paths[f"{name}_mask"] = save_png(mask, out / f"{name}_mask.png")
    paths["cameras"] = out / "cameras.json"
    files.write_text(paths["cameras"], json.dumps(example.cameras, indent=1) + "\n")
    return paths


def write_example(subject: int, n_views: int, size: int, out_dir: str | Path) -> dict[str, Path]:
    """An upload example: ``n_views`` ray-cast views of synthetic subject ``subject`` (images, masks)
    and their ``cameras.json`` — the files the tab's upload and ``avatar reconstruct --upload`` take."""
    return write_example_files(make_example(ExampleRequest(subject=subject, n_views=n_views, size=size)), out_dir)


def write_photo_fit(fitted, out_dir: str | Path) -> dict[str, Path]:
    """Each photo of a fit (``from_photos.PhotoSet``) with MediaPipe's skeleton, the fitted joints and the mask
    drawn on it: ``photoN_fit.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return {f"photo{i}_fit": save_png(preview, out / f"photo{i}_fit.png") for i, preview in enumerate(fitted.previews())}
