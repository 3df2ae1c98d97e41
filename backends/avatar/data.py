"""Ground-truth views of synthetic people, rendered independently of the Gaussian splatter.

A subject is an anny body (random phenotype) in procedural clothes (shirt, trousers, shoes, hair,
skin; plain, striped, checked or dotted cloth). A view is an open3d ray cast of anny's full posed mesh
(27k triangles, anny's own skinning): at each hit, the texture is looked up from the hit triangle's
barycentric coordinates — the rest-pose (canonical) position and the material of its vertices — so
the pattern sticks to the body as it moves, then shaded with ambient + Lambert light. Cameras are the
suite's pinhole cameras (backends.synth.Camera, OpenCV axes, z up) on rings around the person.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import torch

from backends.common.errors import InputError
from backends.common.progress import CancelToken, raise_if_cancelled
from backends.synth import Camera

from .body import Phenotype, RestBody, bone_labels, dense_weights, faces, posed_full_mesh, rest_body
from .pose import Pose, pose_transforms

LIGHT_DIR = np.array([0.35, -0.6, 0.72]) / np.linalg.norm([0.35, -0.6, 0.72])  # towards the light
AMBIENT = 0.55

SKIN_TONES = [(0.96, 0.80, 0.69), (0.90, 0.70, 0.55), (0.78, 0.57, 0.44), (0.60, 0.42, 0.30),
              (0.45, 0.30, 0.22), (0.33, 0.22, 0.16)]
HAIR = [(0.08, 0.06, 0.05), (0.30, 0.18, 0.10), (0.55, 0.38, 0.20), (0.85, 0.72, 0.45), (0.55, 0.55, 0.55)]
CLOTH = [(0.85, 0.15, 0.15), (0.15, 0.35, 0.80), (0.15, 0.60, 0.30), (0.95, 0.80, 0.20), (0.95, 0.95, 0.95),
         (0.12, 0.12, 0.14), (0.55, 0.25, 0.65), (0.95, 0.50, 0.15), (0.40, 0.70, 0.85), (0.55, 0.45, 0.35)]
PATTERNS = ("plain", "stripes", "checks", "dots")

# materials, by index
SKIN, HAIR_M, SHIRT, TROUSERS, SHOES = range(5)

# bone-name prefixes of the body regions clothing is defined on
_REGIONS = {
    "head": ("neck", "head", "eye"), "torso": ("spine", "clavicle", "shoulder", "root", "pelvis"),
    "upperarm": ("upperarm",), "lowerarm": ("lowerarm",), "hand": ("wrist", "finger", "metacarpal"),
    "thigh": ("upperleg",), "shin": ("lowerleg",), "foot": ("foot", "toe"),
}


@dataclass(frozen=True)
class Outfit:
    """Procedural clothes and skin. Colours are linear RGB in [0, 1]."""

    skin: tuple[float, float, float] = SKIN_TONES[1]
    hair: tuple[float, float, float] = HAIR[1]
    shirt: tuple[float, float, float] = CLOTH[1]
    shirt_pattern_colour: tuple[float, float, float] = CLOTH[4]
    trousers: tuple[float, float, float] = CLOTH[5]
    shoes: tuple[float, float, float] = CLOTH[9]
    pattern: str = "stripes"
    pattern_period: float = 0.08  # metres
    long_sleeves: bool = False
    long_trousers: bool = True

    def __post_init__(self):
        if self.pattern not in PATTERNS:
            raise InputError(f"Unknown cloth pattern {self.pattern!r}; use one of {', '.join(PATTERNS)}.")
        if not 0.01 <= self.pattern_period <= 1.0:
            raise InputError("The cloth pattern's period must be between 0.01 and 1 metre.")

    @staticmethod
    def random(rng: np.random.Generator) -> Outfit:
        i, j, k, m = rng.choice(len(CLOTH), 4, replace=False)
        return Outfit(
            skin=SKIN_TONES[rng.integers(len(SKIN_TONES))], hair=HAIR[rng.integers(len(HAIR))],
            shirt=CLOTH[i], shirt_pattern_colour=CLOTH[j], trousers=CLOTH[k], shoes=CLOTH[m],
            pattern=PATTERNS[rng.integers(len(PATTERNS))], pattern_period=float(rng.uniform(0.05, 0.14)),
            long_sleeves=bool(rng.random() < 0.4), long_trousers=bool(rng.random() < 0.7),
        )


@dataclass(frozen=True)
class Subject:
    """One synthetic person: body shape and clothes (poses and cameras vary per view)."""

    phenotype: Phenotype = field(default_factory=Phenotype)
    outfit: Outfit = field(default_factory=Outfit)

    @staticmethod
    def random(rng: np.random.Generator) -> Subject:
        return Subject(Phenotype.random(rng), Outfit.random(rng))


@dataclass
class View:
    """One rendered view: float images plus the camera and pose that made them."""

    rgb: np.ndarray  # H×W×3 float32 in [0, 1], black where the body is not
    mask: np.ndarray  # H×W float32, 1 on the body
    depth: np.ndarray  # H×W float32 z-depth in metres, 0 off the body
    camera: Camera
    pose: Pose


@cache
def _vertex_regions() -> tuple[np.ndarray, tuple[str, ...]]:
    """Each anny vertex's region (by its most influential bone): Vf int array and the region names."""
    names = tuple(_REGIONS)
    bone_region = np.array([next((i for i, r in enumerate(names) if label.startswith(_REGIONS[r])), 1)
                            for label in bone_labels()])
    return bone_region[dense_weights().argmax(1).numpy()], names


def vertex_materials(rest: RestBody, outfit: Outfit) -> np.ndarray:
    """Each anny vertex's material (SKIN, HAIR_M, SHIRT, TROUSERS, SHOES) for this body and outfit."""
    region, names = _vertex_regions()
    r = {n: region == i for i, n in enumerate(names)}
    v = rest.vertices.numpy()
    labels = bone_labels()
    head_bone = rest.bone_heads[labels.index("head")].numpy()
    eyes = rest.bone_heads[labels.index("eye.L")].numpy()
    mat = np.full(len(v), SKIN, np.int64)
    mat[r["torso"] | r["upperarm"] | (r["lowerarm"] if outfit.long_sleeves else False)] = SHIRT
    mat[(r["thigh"] | (r["shin"] if outfit.long_trousers else False))] = TROUSERS
    # the torso's lower part (hips, below the navel) belongs to the trousers
    pelvis_z = rest.bone_heads[0, 2].item()
    mat[r["torso"] & (v[:, 2] < pelvis_z + 0.06)] = TROUSERS
    mat[r["foot"]] = SHOES
    scalp = r["head"] & ((v[:, 2] > eyes[2] + 0.045) | ((v[:, 1] > head_bone[1] + 0.02) & (v[:, 2] > head_bone[2])))
    mat[scalp] = HAIR_M
    return mat


def _albedo(outfit: Outfit, material: np.ndarray, canonical: np.ndarray) -> np.ndarray:
    """N×3 colours from materials and rest-pose positions (the procedural textures)."""
    palette = np.array([outfit.skin, outfit.hair, outfit.shirt, outfit.trousers, outfit.shoes])
    out = palette[material]
    shirt = material == SHIRT
    if outfit.pattern != "plain" and shirt.any():
        p = canonical[shirt] / outfit.pattern_period
        if outfit.pattern == "stripes":
            on = np.floor(p[:, 2] * 2) % 2 == 0
        elif outfit.pattern == "checks":
            on = (np.floor(p[:, 0]) + np.floor(p[:, 1]) + np.floor(p[:, 2])) % 2 == 0
        else:  # dots
            on = np.linalg.norm(p - np.round(p), axis=1) < 0.3
        sub = out[shirt]
        sub[on] = outfit.shirt_pattern_colour
        out[shirt] = sub
    return out


def render_view(subject: Subject, pose: Pose, camera: Camera, rest: RestBody | None = None,
                cancel: CancelToken | None = None) -> View:
    """Ray-cast anny's posed, textured mesh from ``camera``."""
    return render_views(subject, pose, [camera], rest, cancel)[0]


def render_views(subject: Subject, pose: Pose, cameras: list[Camera], rest: RestBody | None = None,
                 cancel: CancelToken | None = None) -> list[View]:
    """Ray-cast anny's posed, textured mesh from each camera (the mesh is posed and loaded once); ``cancel``
    (a Stop) ends it between its steps."""
    import open3d as o3d
    import open3d.core as o3c

    raise_if_cancelled(cancel)
    rest = rest or rest_body(subject.phenotype)
    tri = faces()
    verts = posed_full_mesh(rest, pose_transforms(rest, pose))
    raise_if_cancelled(cancel)
    scene = o3d.t.geometry.RaycastingScene()
    scene.add_triangles(o3c.Tensor(verts), o3c.Tensor(tri.astype(np.uint32)))
    materials = vertex_materials(rest, subject.outfit)
    canonical_vertices = rest.vertices.numpy()
    views = []
    for camera in cameras:
        raise_if_cancelled(cancel)
        rays = camera.rays()
        hit = scene.cast_rays(o3c.Tensor(rays))
        t = hit["t_hit"].numpy()
        found = np.isfinite(t)
        rgb = np.zeros(t.shape + (3,), np.float32)
        if found.any():
            prim = hit["primitive_ids"].numpy()[found].astype(np.int64)
            uv = hit["primitive_uvs"].numpy()[found]
            bary = np.stack([1 - uv[:, 0] - uv[:, 1], uv[:, 0], uv[:, 1]], 1)
            corners = tri[prim]  # N×3 vertex ids
            canonical = (canonical_vertices[corners] * bary[..., None]).sum(1)
            material = materials[corners][np.arange(len(corners)), bary.argmax(1)]  # the nearest corner's
            albedo = _albedo(subject.outfit, material, canonical)
            normals = hit["primitive_normals"].numpy()[found]
            dirs = rays[..., 3:][found]
            normals = np.where((np.sum(normals * dirs, -1) > 0)[:, None], -normals, normals)
            shade = AMBIENT + (1 - AMBIENT) * np.clip(normals @ LIGHT_DIR, 0, 1)
            rgb[found] = np.clip(albedo * shade[:, None], 0, 1)
        depth = np.where(found, t, 0).astype(np.float32)
        views.append(View(rgb, found.astype(np.float32), depth, camera, pose))
    return views


def camera_ring(n: int, size: int = 128, radius: float = 3.0, height: float = 0.1, fov_deg: float = 40.0,
                start_deg: float = 0.0, look_at: tuple[float, float, float] = (0.0, 0.0, -0.05),
                jitter_deg: float = 0.0, rng: np.random.Generator | None = None) -> list[Camera]:
    """``n`` cameras evenly around the body (0° = in front of it, at -y), looking at its centre."""
    if not 1 <= n <= 360:
        raise InputError(f"A camera ring needs 1 to 360 cameras, not {n}.")
    cams = []
    for i in range(n):
        a = np.radians(start_deg + 360.0 * i / n + (rng.normal(0, jitter_deg) if rng is not None else 0.0))
        pos = (look_at[0] + radius * np.sin(a), look_at[1] - radius * np.cos(a), look_at[2] + height)
        cams.append(Camera(size, size, fov_deg, tuple(float(x) for x in pos), look_at))
    return cams


@dataclass
class SubjectSample:
    """A few views of one subject in one pose (the reconstructor's inputs and its targets)."""

    subject: Subject
    views: list[View]
    ms_per_view: float


def sample_subject(seed: int, n_views: int = 4, size: int = 128, pose: Pose | None = None,
                   cancel: CancelToken | None = None) -> SubjectSample:
    """A random subject in a random (or the given) pose seen from a jittered ring of ``n_views`` cameras."""
    rng = np.random.default_rng(seed)
    subject = Subject.random(rng)
    pose = pose or Pose.random(rng, spread=0.7)
    rest = rest_body(subject.phenotype)
    raise_if_cancelled(cancel)
    cams = camera_ring(n_views, size, start_deg=float(rng.uniform(0, 360)), jitter_deg=5.0, rng=rng)
    start = time.perf_counter()
    with torch.no_grad():
        views = render_views(subject, pose, cams, rest, cancel)
    return SubjectSample(subject, views, 1000 * (time.perf_counter() - start) / len(cams))


def ood_inputs(seed0: int, n: int = 600, size: int = 64) -> tuple[list[np.ndarray], None]:
    """``n`` held-out views for the out-of-domain statistics (``training/ood_calibration.py``), as the reconstructor
    sees an upload: rendered at ``size`` or at twice it and resized like ``uploads.resize_views`` (bilinear,
    antialiased), masked. Scored whole, as uploaded: a render's background is black, a photo's is a photo's,
    whatever its mask says. The default ``n`` is the fit split's."""
    import torch.nn.functional as F

    images: list[np.ndarray] = []
    i = 0
    while len(images) < n:
        sample = sample_subject(seed0 + i, 2, size if i % 2 == 0 else 2 * size)
        for v in sample.views:
            img = np.asarray(v.rgb, np.float32) / (255.0 if np.asarray(v.rgb).dtype == np.uint8 else 1.0)
            m = (np.asarray(v.mask, np.float32) > 0.5).astype(np.float32)
            if img.shape[:2] != (size, size):
                t = torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1)[None]
                img = F.interpolate(t, size=(size, size), mode="bilinear", antialias=True).clamp(0, 1)[0] \
                    .permute(1, 2, 0).numpy()
                tm = torch.from_numpy(m)[None, None]
                m = (F.interpolate(tm, size=(size, size), mode="bilinear", antialias=True)[0, 0] > 0.5).float().numpy()
            images.append(np.round(img * m[..., None] * 255).astype(np.uint8))
        i += 1
    return images[:n], None
