"""Named poses for the avatar: a few angle sliders (degrees) and presets built from them.

Each slider rotates one anny bone towards a direction a person understands ("raise the arm", "bend
the knee"); the rotation axis comes from the rest skeleton's own limb directions, so the sliders work
for every phenotype. The body faces -y with z up; left is +x.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from .body import RestBody, bone_labels, bone_transforms
from .params import PRESETS, SLIDER_RANGES, Pose, preset  # noqa: F401 (torch-free; re-exported here)

UP = np.array([0.0, 0.0, 1.0])
FORWARD = np.array([0.0, -1.0, 0.0])


def rotation(axis: np.ndarray, degrees: float) -> np.ndarray:
    """3×3 rotation by ``degrees`` about ``axis`` (right-hand rule)."""
    axis = np.asarray(axis, dtype=np.float64)
    axis = axis / np.linalg.norm(axis)
    a = math.radians(degrees)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(a) * k + (1 - math.cos(a)) * (k @ k)


def _towards(direction: np.ndarray, target: np.ndarray, degrees: float) -> np.ndarray:
    """The rotation that turns ``direction`` by ``degrees`` towards ``target`` (in their common plane)."""
    axis = np.cross(direction, target)
    if np.linalg.norm(axis) < 1e-9:
        return np.eye(3)
    return rotation(axis, degrees)


def _angle(a: np.ndarray, b: np.ndarray) -> float:
    cos = np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))
    return math.degrees(math.acos(np.clip(cos, -1.0, 1.0)))


def pose_deltas(rest: RestBody, pose: Pose) -> dict[str, np.ndarray]:
    """Per-bone rotations (world-aligned, about each bone's head) that put anny's ``rest`` into ``pose``."""
    labels = bone_labels()
    heads = rest.bone_heads.numpy()
    return pose_rotations(lambda label: heads[labels.index(label)], pose)


def pose_rotations(head: Callable[[str], np.ndarray], pose: Pose) -> dict[str, np.ndarray]:
    """The rotations of the slider bones, named as anny names them, from their rest heads ``head(label)``
    (any skeleton whose joints can be named so: z up, facing -y, left at +x)."""
    deltas: dict[str, np.ndarray] = {}
    for side, s in (("l", "L"), ("r", "R")):
        outward = np.array([1.0 if side == "l" else -1.0, 0.0, 0.0])
        # Arm: raise it in the plane of its rest direction and the vertical, then swing it forward.
        arm = head(f"lowerarm01.{s}") - head(f"upperarm01.{s}")
        raise_by = getattr(pose, f"arm_raise_{side}") - _angle(arm, -UP)
        r_arm = _towards(arm, UP, raise_by)
        raised = r_arm @ arm
        swing = getattr(pose, f"arm_forward_{side}")
        r_arm = _towards(raised, FORWARD, swing) @ r_arm if np.linalg.norm(np.cross(raised, FORWARD)) > 1e-6 \
            else r_arm
        deltas[f"upperarm01.{s}"] = r_arm
        # Elbow: straighten the rest forearm (measured in the arm's frame), then bend it forward/inward.
        forearm = head(f"wrist.{s}") - head(f"lowerarm01.{s}")
        bend_by = getattr(pose, f"elbow_{side}") - _angle(forearm, arm)
        target = np.cross(np.cross(arm, forearm), arm)  # in the arm–forearm plane, perpendicular to the arm
        deltas[f"lowerarm01.{s}"] = _towards(forearm, target, bend_by) if np.linalg.norm(target) > 1e-9 \
            else np.eye(3)
        # Hip: forward (flexion) then outward (abduction); knee bends backward.
        thigh = head(f"lowerleg01.{s}") - head(f"upperleg01.{s}")
        r_hip = _towards(thigh, FORWARD, getattr(pose, f"hip_{side}"))
        rest_out = math.degrees(math.atan2(thigh[0] * outward[0], -thigh[2]))
        r_hip = _towards(r_hip @ thigh, outward, getattr(pose, f"hip_out_{side}") - rest_out) @ r_hip
        deltas[f"upperleg01.{s}"] = r_hip
        shin = head(f"foot.{s}") - head(f"lowerleg01.{s}")
        deltas[f"lowerleg01.{s}"] = _towards(shin, -FORWARD, getattr(pose, f"knee_{side}"))
    spine = head("neck01") - head("spine03")
    deltas["spine03"] = _towards(spine, FORWARD, pose.spine)
    deltas["neck01"] = rotation(UP, pose.head_turn)
    return deltas


def pose_transforms(rest: RestBody, pose: Pose) -> torch.Tensor:
    """J×4×4 skinning transforms for ``pose``; the yaw turns the body about the vertical through its root."""
    deltas = {k: torch.from_numpy(v) for k, v in pose_deltas(rest, pose).items()}
    return bone_transforms(rest, deltas, yaw_transform(pose.yaw, rest.bone_heads[0].numpy()))


def yaw_transform(yaw_deg: float, centre: np.ndarray) -> torch.Tensor:
    """4×4 turn by ``yaw_deg`` about the vertical line through ``centre``."""
    root = torch.eye(4, dtype=torch.float64)
    c = torch.tensor([centre[0], centre[1], 0.0], dtype=torch.float64)
    root[:3, :3] = torch.from_numpy(rotation(UP, yaw_deg))
    root[:3, 3] = c - root[:3, :3] @ c
    return root
