"""SMPL-X, the published LIFe-GoM's body template, used only when the user supplies its model file.

Its licence (MPI, non-commercial, registration required) forbids shipping it, so the suite registers it
(``models.SPECS``, id ``smplx``) and reads ``SMPLX_NEUTRAL.npz`` from the models folder when present:
template, faces, LBS weights, joint regressor, kinematic tree and shape blendshapes. It is turned into
the suite's frame (z up, facing -y, left at +x) and posed with the same sliders as anny, through a map
from the sliders' anny bones to SMPL-X joints. Pose-dependent blendshapes are not used (LIFe-GoM skins
with the LBS weights alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from backends.common.errors import InputError
from backends.common.settings import Settings

from .body import decimate, forward_kinematics
from .pose import Pose, pose_rotations, yaw_transform

BODY_JOINTS = ("pelvis", "left_hip", "right_hip", "spine1", "left_knee", "right_knee", "spine2", "left_ankle",
               "right_ankle", "spine3", "left_foot", "right_foot", "neck", "left_collar", "right_collar", "head",
               "left_shoulder", "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist")
# the anny bones the pose sliders name → SMPL-X joints
SLIDER_JOINTS = {
    "upperarm01.L": "left_shoulder", "lowerarm01.L": "left_elbow", "wrist.L": "left_wrist",
    "upperarm01.R": "right_shoulder", "lowerarm01.R": "right_elbow", "wrist.R": "right_wrist",
    "upperleg01.L": "left_hip", "lowerleg01.L": "left_knee", "foot.L": "left_ankle",
    "upperleg01.R": "right_hip", "lowerleg01.R": "right_knee", "foot.R": "right_ankle",
    "spine03": "spine2", "neck01": "neck",
}
Y_UP_TO_Z_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])  # SMPL-X faces +z with y up
_KEYS = ("v_template", "f", "weights", "kintree_table", "J_regressor", "shapedirs")
# the rest of what the official loader (vchoutas/smplx SMPLX) reads: not used here (LIFe-GoM skins with the
# LBS weights alone), but checked when present so a file of another layout is refused, not half-read
OPTIONAL_KEYS = ("posedirs", "hands_componentsl", "hands_componentsr", "hands_meanl", "hands_meanr",
                 "lmk_faces_idx", "lmk_bary_coords", "dynamic_lmk_faces_idx", "dynamic_lmk_bary_coords")
HAND_PCA = 45  # 15 hand joints × 3


def expected_layout(n_vertices: int, n_faces: int, n_joints: int, n_shape: int, n_landmarks: int = 51,
                    dynamic: tuple[int, int] = (79, 17)) -> dict[str, tuple[int, ...]]:
    """name → shape of every array :func:`read_smplx` reads or checks, for a model of these sizes (SMPL-X v1.1:
    10475, 20908, 55, 400)."""
    return {"v_template": (n_vertices, 3), "f": (n_faces, 3), "weights": (n_vertices, n_joints),
            "kintree_table": (2, n_joints), "J_regressor": (n_joints, n_vertices),
            "shapedirs": (n_vertices, 3, n_shape), "posedirs": (n_vertices, 3, 9 * (n_joints - 1)),
            "hands_componentsl": (HAND_PCA, HAND_PCA), "hands_componentsr": (HAND_PCA, HAND_PCA),
            "hands_meanl": (HAND_PCA,), "hands_meanr": (HAND_PCA,),
            "lmk_faces_idx": (n_landmarks,), "lmk_bary_coords": (n_landmarks, 3),
            "dynamic_lmk_faces_idx": dynamic, "dynamic_lmk_bary_coords": (*dynamic, 3)}


@dataclass
class SmplxModel:
    v_template: np.ndarray  # V×3, in the suite's frame
    faces: np.ndarray  # F×3
    weights: np.ndarray  # V×J
    parents: list[int]
    j_regressor: np.ndarray  # J×V
    shapedirs: np.ndarray  # V×3×B, in the suite's frame

    @property
    def joint_names(self) -> list[str]:
        return list(BODY_JOINTS) + [f"joint{j}" for j in range(len(BODY_JOINTS), len(self.parents))]


@dataclass
class SmplxRest:
    vertices: torch.Tensor  # V×3 float64
    joints: torch.Tensor  # J×3 float64


def load_smplx(settings: Settings | None = None) -> SmplxModel:
    """The user's SMPL-X model from the models folder, or ModelMissingError saying how to get it."""
    from backends.common.registry import default_registry

    found = default_registry().resolve("smplx", settings)
    return read_smplx(found.path / "SMPLX_NEUTRAL.npz")


def read_smplx(path: str | Path) -> SmplxModel:
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise InputError(f"{Path(path).name} is not a readable SMPL-X .npz file ({e}).") from None
    with data:
        missing = [k for k in _KEYS if k not in data.files]
        if missing:
            raise InputError(f"{Path(path).name} lacks the SMPL-X arrays {', '.join(missing)}.")
        v, f, w = data["v_template"], data["f"], data["weights"]
        kintree, jreg, dirs = data["kintree_table"], data["J_regressor"], data["shapedirs"]
        optional = {k: data[k].shape for k in OPTIONAL_KEYS if k in data.files}
    n_v, n_j = len(v), w.shape[1]
    if dirs.ndim == 3 and f.ndim == 2:
        lmk = optional.get("lmk_faces_idx", (51,))
        layout = expected_layout(n_v, len(f), n_j, dirs.shape[2], lmk[0] if lmk else 51,
                                 tuple(optional.get("dynamic_lmk_faces_idx", (79, 17))))
        wrong = [k for k, shape in optional.items() if tuple(shape) != layout[k]]
        if wrong:
            raise InputError(f"{Path(path).name} has SMPL-X arrays of unexpected shapes: {', '.join(wrong)}.")
    if v.shape != (n_v, 3) or w.shape[0] != n_v or jreg.shape != (n_j, n_v) or kintree.shape[1] != n_j \
            or dirs.shape[:2] != (n_v, 3) or f.ndim != 2 or f.shape[1] != 3 or f.max() >= n_v \
            or n_j < len(BODY_JOINTS):
        raise InputError(f"{Path(path).name} has SMPL-X arrays of inconsistent shapes.")
    parents = kintree[0].astype(np.int64)
    parents[0] = -1  # stored as 2³²−1
    return SmplxModel(
        v_template=np.asarray(v, np.float64) @ Y_UP_TO_Z_UP.T, faces=np.asarray(f, np.int64),
        weights=np.asarray(w, np.float64), parents=[int(p) for p in parents],
        j_regressor=np.asarray(jreg, np.float64),
        shapedirs=np.einsum("ij,vjb->vib", Y_UP_TO_Z_UP, np.asarray(dirs, np.float64)),
    )


def smplx_rest(model: SmplxModel, betas: np.ndarray | None = None) -> SmplxRest:
    """The body of shape ``betas`` (the first len(betas) shape components) in its rest pose."""
    v = model.v_template
    if betas is not None:
        betas = np.asarray(betas, np.float64)
        if betas.ndim != 1 or len(betas) > model.shapedirs.shape[2]:
            raise InputError(f"SMPL-X takes at most {model.shapedirs.shape[2]} shape parameters.")
        v = v + model.shapedirs[:, :, :len(betas)] @ betas
    return SmplxRest(torch.from_numpy(v), torch.from_numpy(model.j_regressor @ v))


def smplx_transforms(model: SmplxModel, rest: SmplxRest, pose: Pose) -> torch.Tensor:
    """J×4×4 skinning transforms that put the SMPL-X body into ``pose`` (the anny sliders)."""
    names = model.joint_names
    joints = rest.joints.numpy()
    rotations = pose_rotations(lambda label: joints[names.index(SLIDER_JOINTS[label])], pose)
    deltas = {SLIDER_JOINTS[k]: torch.from_numpy(r) for k, r in rotations.items()}
    return forward_kinematics(rest.joints, model.parents, names, deltas, yaw_transform(pose.yaw, joints[0]))


def smplx_coarse(model: SmplxModel, n_faces: int = 1500):
    """A coarse reconstruction mesh of SMPL-X (blends of its vertices; ``.lbs_weights(model.weights)``)."""
    return decimate(model.v_template, model.faces, n_faces)
