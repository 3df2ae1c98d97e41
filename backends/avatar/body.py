"""The body template of the avatar: the anny body model, its coarse reconstruction mesh, and skinning.

anny (NAVER; Apache-2.0 code, CC0 MakeHuman assets) stands in for SMPL-X: a rigged, skinned body
(13,718 vertices, 104 bones, z up, facing -y) whose shape is set by phenotype parameters in [0, 1].
Its first build takes about a minute, needs no network and is deterministic (anny's own data,
cached under ``<models_dir>/cache/anny``). LIFe-GoM reconstructs on a coarse mesh: here a quadric
decimation of anny's body (~1.5k faces) whose vertices are fixed barycentric blends of anny's, so
every phenotype gives the same coarse topology and its LBS weights are the same blends of anny's
weights. That mesh ships with the model trained on it (``template.safetensors``): the decimation is
not reproducible from one process to the next, so it is never rebuilt at run time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from backends.common.errors import InputError
from backends.common.settings import Settings, get_settings

from .params import PHENOTYPES, Phenotype  # noqa: F401 (torch-free; re-exported here)

COARSE_FACES = 1500

_lock = threading.Lock()
_model = None
_shipped: CoarseTemplate | None = None


def anny_cache_dir(settings: Settings | None = None) -> Path:
    """Where anny's built model data are cached (derived from the package, deterministic): once per machine."""
    return (settings or get_settings()).models_dir / "cache" / "anny"


def body_model(settings: Settings | None = None):
    """The process's anny model (torch LBS, float64 buffers), built or loaded from the cache once."""
    global _model
    from backends.common.modelbuild import BUILD_LOCK, check_built

    if _model is not None:
        return _model
    with BUILD_LOCK:  # anny's build makes torch modules: never beside another thread's empty-weights patch
        if _model is None:
            import anny
            from anny.paths import set_anny_cache_path

            cache = anny_cache_dir(settings)
            cache.mkdir(parents=True, exist_ok=True)
            set_anny_cache_path(cache)
            _model = check_built(anny.Anny(skinning_method="lbs").eval(), "the anny body model")
        return _model


@dataclass
class RestBody:
    """One phenotype's body in its rest pose: what posing starts from."""

    phenotype: Phenotype
    vertices: torch.Tensor  # Vf×3 (float64), anny's full mesh
    bone_poses: torch.Tensor  # J×4×4 rest pose of each bone (head at the translation)

    @property
    def bone_heads(self) -> torch.Tensor:
        return self.bone_poses[:, :3, 3]


@torch.no_grad()
def rest_body(phenotype: Phenotype | None = None) -> RestBody:
    phenotype = phenotype or Phenotype()
    model = body_model()
    coeffs = model._get_phenotype_blendshape_coefficients(
        torch.tensor([[getattr(phenotype, n) for n in model.phenotype_labels]], dtype=model.dtype),
        torch.zeros(1, len(model.local_change_labels), dtype=model.dtype),
        torch.zeros(1, len(model.facial_action_labels), dtype=model.dtype),
    )
    rest = model.get_rest_model(coeffs)
    return RestBody(phenotype, rest["rest_vertices"][0], rest["rest_bone_poses"][0])


def faces() -> np.ndarray:
    """anny's triangles (F×3 int64)."""
    return body_model().faces.numpy().astype(np.int64)


def bone_labels() -> list[str]:
    return list(body_model().bone_labels)


def dense_weights() -> torch.Tensor:
    """anny's LBS weights as a dense Vf×J matrix (rows sum to 1)."""
    model = body_model()
    w = torch.zeros(model.template_vertices.shape[0], model.bone_count, dtype=model.dtype)
    return w.scatter_add_(1, model.vertex_bone_indices.long(), model.vertex_bone_weights)


# --- posing --------------------------------------------------------------------------------------

def bone_transforms(rest: RestBody, deltas: dict[str, torch.Tensor] | None = None,
                    root: torch.Tensor | None = None) -> torch.Tensor:
    """J×4×4 skinning transforms (rest → posed, world frame) by forward kinematics over anny's skeleton.

    ``deltas`` maps a bone label to a 3×3 rotation about world-aligned axes at the bone's rest head,
    applied on top of its parent's motion. ``root`` (4×4) moves the whole body afterwards (global yaw,
    translation). No deltas and no root give identity transforms.
    """
    model = body_model()
    return forward_kinematics(rest.bone_heads, list(model.bone_parents), list(model.bone_labels), deltas, root)


def forward_kinematics(heads: torch.Tensor, parents: list[int], labels: list[str],
                       deltas: dict[str, torch.Tensor] | None = None, root: torch.Tensor | None = None) -> torch.Tensor:
    """T_c = T_parent · [G_c about h_c] for every bone (float64 J×4×4), then ``root`` · T."""
    local = torch.eye(4, dtype=torch.float64).repeat(len(labels), 1, 1)
    heads = torch.as_tensor(heads).to(torch.float64)
    for label, rot in (deltas or {}).items():
        if label not in labels:
            raise InputError(f"The skeleton has no bone named {label!r}.")
        j = labels.index(label)
        g = torch.as_tensor(rot, dtype=torch.float64)
        local[j, :3, :3] = g
        local[j, :3, 3] = heads[j] - g @ heads[j]
    out = [None] * len(labels)
    for j in _topological_order(parents):
        out[j] = local[j] if parents[j] < 0 else out[parents[j]] @ local[j]
    transforms = torch.stack(out)
    if root is not None:
        transforms = torch.as_tensor(root, dtype=torch.float64) @ transforms
    return transforms


def _topological_order(parents) -> list[int]:
    order, seen = [], set()
    def visit(j):
        if j in seen:
            return
        if parents[j] >= 0:
            visit(parents[j])
        seen.add(j)
        order.append(j)
    for j in range(len(parents)):
        visit(j)
    return order


def skin(vertices: torch.Tensor, weights: torch.Tensor, transforms: torch.Tensor) -> torch.Tensor:
    """Linear blend skinning: each vertex moved by the weight-blend of its bones' 4×4 transforms.

    vertices [..., V, 3], weights [V, J] (rows sum to 1), transforms [..., J, 4, 4] → [..., V, 3].
    Differentiable in the vertices and the transforms.
    """
    weights = weights.to(vertices.dtype)
    transforms = transforms.to(vertices.dtype)
    blended = torch.einsum("vj,...jab->...vab", weights, transforms[..., :3, :])  # [..., V, 3, 4]
    return torch.einsum("...vab,...vb->...va", blended[..., :3], vertices) + blended[..., 3]


@torch.no_grad()
def posed_full_mesh(rest: RestBody, transforms: torch.Tensor) -> np.ndarray:
    """anny's full mesh skinned by anny's own sparse weights (the ground-truth body): Vf×3 float32."""
    model = body_model()
    v = model.get_skinned_vertices(rest.vertices[None], transforms[None].to(model.dtype))
    return v[0].numpy().astype(np.float32)


# --- the coarse mesh ------------------------------------------------------------------------------

@dataclass
class CoarseTemplate:
    """A decimated body mesh whose vertex i is ``Σ_k weights[i, k] · anny_vertex[indices[i, k]]``."""

    faces: np.ndarray  # F×3 int64
    indices: np.ndarray  # V×3 int64, anny vertices
    weights: np.ndarray  # V×3 float64, barycentric (rows sum to 1)

    @property
    def n_vertices(self) -> int:
        return len(self.indices)

    def blend_matrix(self, n_full: int) -> torch.Tensor:
        """V×Vf sparse blend as a dense matrix (small: ~750 × 13.7k)."""
        m = torch.zeros(self.n_vertices, n_full, dtype=torch.float64)
        rows = torch.arange(self.n_vertices)[:, None].expand(-1, 3)
        return m.index_put_((rows, torch.from_numpy(self.indices)), torch.from_numpy(self.weights), accumulate=True)

    def vertices(self, full_vertices: torch.Tensor) -> torch.Tensor:
        """Coarse vertex positions from anny's (any phenotype, any pose): [..., Vf, 3] → [..., V, 3]."""
        idx = torch.from_numpy(self.indices)
        w = torch.from_numpy(self.weights).to(full_vertices.dtype)
        return (full_vertices[..., idx, :] * w[..., None]).sum(-2)

    def lbs_weights(self, dense: torch.Tensor | None = None) -> torch.Tensor:
        """V×J skinning weights: the same blends of the full mesh's dense weights (anny's by default)."""
        dense = dense_weights() if dense is None else torch.as_tensor(dense, dtype=torch.float64)
        return (dense[torch.from_numpy(self.indices)] * torch.from_numpy(self.weights)[..., None]).sum(1)


TEMPLATE_FILE = "template.safetensors"


def coarse_template() -> CoarseTemplate:
    """The coarse template every shipped avatar model is built on, read from the embedded model's folder.

    It ships with the model (``assets/avatar-embedded/template.safetensors``, checksum-verified by the
    registry) because a rebuild is not reproducible: open3d's quadric decimation can give another
    topology in another process, and a model trained on one mesh is garbage on another.
    """
    global _shipped
    with _lock:
        if _shipped is None:
            from backends.common.registry import default_registry

            _shipped = load_template(default_registry().resolve("avatar-embedded").path)
        return _shipped


def save_template(template: CoarseTemplate, folder: Path) -> None:
    """Write ``template.safetensors`` (faces, blend indices, blend weights) into a model folder."""
    from safetensors.numpy import save_file

    save_file({"faces": np.ascontiguousarray(template.faces, dtype=np.int64),
               "indices": np.ascontiguousarray(template.indices, dtype=np.int64),
               "weights": np.ascontiguousarray(template.weights, dtype=np.float64)},
              str(Path(folder) / TEMPLATE_FILE))


def load_template(folder: Path) -> CoarseTemplate:
    """The coarse template saved with the model in ``folder``; a clear error when it has none."""
    from safetensors.numpy import load_file

    path = Path(folder) / TEMPLATE_FILE
    if not path.is_file():
        raise InputError(f"The avatar model folder {Path(folder).name!r} has no {TEMPLATE_FILE} (the coarse body "
                         "mesh it was trained on); export it again with training.avatar_reconstructor --export.")
    f = load_file(str(path))
    return CoarseTemplate(f["faces"], f["indices"], f["weights"])


def build_coarse_template(n_faces: int = COARSE_FACES) -> CoarseTemplate:
    """A new coarse template with about ``n_faces`` faces, decimated from anny's average body.

    Only for training a model on a new topology: the result is not reproducible across processes, so
    it is saved with the model it trains (:func:`save_template`) and never rebuilt at run time.
    """
    if not 200 <= n_faces <= 20000:
        raise InputError(f"A coarse body mesh needs between 200 and 20000 faces, not {n_faces}.")
    return decimate(rest_body().vertices.numpy(), faces(), n_faces)


def blends_of(points: np.ndarray, full_vertices: np.ndarray, full_faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each point as a barycentric blend of the closest triangle of a mesh's largest component:
    (indices V×3, weights V×3). How a coarse vertex is tied to anny's surface."""
    import open3d as o3d
    import open3d.core as o3c

    v = np.asarray(full_vertices, dtype=np.float64)
    f = np.asarray(full_faces, dtype=np.int64)
    mesh = o3d.geometry.TriangleMesh(o3d.utility.Vector3dVector(v), o3d.utility.Vector3iVector(f))
    clusters, counts, _ = mesh.cluster_connected_triangles()
    largest = f[np.asarray(clusters) == int(np.argmax(np.asarray(counts)))]  # e.g. drop anny's eyes and mouth parts
    scene = o3d.t.geometry.RaycastingScene()
    scene.add_triangles(o3c.Tensor(v.astype(np.float32)), o3c.Tensor(largest.astype(np.uint32)))
    hit = scene.compute_closest_points(o3c.Tensor(np.asarray(points, dtype=np.float32)))
    tri = largest[hit["primitive_ids"].numpy()]
    uv = hit["primitive_uvs"].numpy().astype(np.float64)
    weights = np.stack([1 - uv[:, 0] - uv[:, 1], uv[:, 0], uv[:, 1]], 1).clip(0, 1)
    return tri.astype(np.int64), weights / weights.sum(1, keepdims=True)


def anny_cache_dir_loaded() -> Path:
    """The cache folder the loaded anny model uses (the first load decides, for the whole process)."""
    from anny.paths import get_anny_cache_path

    body_model()
    return Path(get_anny_cache_path())


def decimate(v: np.ndarray, f: np.ndarray, n_faces: int) -> CoarseTemplate:
    """Quadric decimation of a mesh's largest component, each new vertex snapped to the full surface."""
    import open3d as o3d

    v = np.asarray(v, dtype=np.float64)
    f = np.asarray(f, dtype=np.int64)
    mesh = o3d.geometry.TriangleMesh(o3d.utility.Vector3dVector(v), o3d.utility.Vector3iVector(f))
    clusters, counts, _ = mesh.cluster_connected_triangles()
    body = np.asarray(clusters) == int(np.argmax(np.asarray(counts)))  # e.g. drop anny's eyes and mouth parts
    mesh.remove_triangles_by_mask(~body)
    mesh.remove_unreferenced_vertices()
    coarse = mesh.simplify_quadric_decimation(n_faces)
    indices, weights = blends_of(np.asarray(coarse.vertices), v, f)  # each new vertex snapped to the full surface
    return CoarseTemplate(np.asarray(coarse.triangles, dtype=np.int64), indices, weights)
