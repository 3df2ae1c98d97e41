"""Named poses for the avatar: a few angle sliders (degrees) and presets built from them.

Each slider rotates one anny bone towards a direction a person understands ("raise the arm", "bend
the knee"); the rotation axis comes from the rest skeleton's own limb directions, so the sliders work
for every phenotype. The body faces -y with z up; left is +x.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields

import numpy as np
import torch

from backends.common.errors import InputError

from .body import RestBody, bone_labels, bone_transforms

UP = np.array([0.0, 0.0, 1.0])
FORWARD = np.array([0.0, -1.0, 0.0])

# slider → (range in degrees, what it means)
SLIDER_RANGES: dict[str, tuple[float, float]] = {
    "yaw": (-180.0, 180.0),  # the whole body turns about the vertical axis
    "arm_raise_l": (0.0, 180.0), "arm_raise_r": (0.0, 180.0),  # 0 = arm down, 90 = horizontal, 180 = up
    "arm_forward_l": (-60.0, 120.0), "arm_forward_r": (-60.0, 120.0),  # swing the raised arm forward
    "elbow_l": (0.0, 150.0), "elbow_r": (0.0, 150.0),  # 0 = straight forearm
    "hip_l": (-40.0, 120.0), "hip_r": (-40.0, 120.0),  # thigh forward (flexion), negative = backward
    "hip_out_l": (-10.0, 60.0), "hip_out_r": (-10.0, 60.0),  # thigh sideways (abduction)
    "knee_l": (0.0, 150.0), "knee_r": (0.0, 150.0),  # 0 = straight leg
    "spine": (-30.0, 60.0),  # bend forward
    "head_turn": (-70.0, 70.0),  # look left (+) / right (-)
}


@dataclass(frozen=True)
class Pose:
    """Angles in degrees. Defaults are the neutral standing pose (arms 45° down, legs straight)."""

    yaw: float = 0.0
    arm_raise_l: float = 45.0
    arm_raise_r: float = 45.0
    arm_forward_l: float = 0.0
    arm_forward_r: float = 0.0
    elbow_l: float = 5.0
    elbow_r: float = 5.0
    hip_l: float = 0.0
    hip_r: float = 0.0
    hip_out_l: float = 5.0
    hip_out_r: float = 5.0
    knee_l: float = 0.0
    knee_r: float = 0.0
    spine: float = 0.0
    head_turn: float = 0.0

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            lo, hi = SLIDER_RANGES[f.name]
            if not isinstance(value, int | float) or not math.isfinite(value) or not lo <= value <= hi:
                raise InputError(f"The pose slider '{f.name}' must be between {lo:g} and {hi:g} degrees, "
                                 f"not {value!r}.")

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}

    @staticmethod
    def from_dict(values: dict) -> Pose:
        unknown = set(values) - set(SLIDER_RANGES)
        if unknown:
            raise InputError(f"Unknown pose sliders: {', '.join(sorted(unknown))}. "
                             f"Known: {', '.join(SLIDER_RANGES)}.")
        return Pose(**{k: float(v) for k, v in values.items()})

    @staticmethod
    def random(rng: np.random.Generator, spread: float = 1.0) -> Pose:
        """A random everyday pose around the neutral one (``spread`` scales the variation)."""
        n = Pose()
        def around(name, sd):
            lo, hi = SLIDER_RANGES[name]
            return float(np.clip(getattr(n, name) + rng.normal(0, sd * spread), lo, hi))
        values = {name: around(name, sd) for name, sd in (
            ("arm_raise_l", 30), ("arm_raise_r", 30), ("arm_forward_l", 20), ("arm_forward_r", 20),
            ("elbow_l", 30), ("elbow_r", 30), ("hip_l", 20), ("hip_r", 20), ("hip_out_l", 6),
            ("hip_out_r", 6), ("spine", 8), ("head_turn", 20))}
        for side in "lr":  # a bent knee goes with a thigh that is forward, as in walking
            values[f"knee_{side}"] = float(np.clip(abs(rng.normal(0, 25 * spread)), 0, 120))
            values[f"elbow_{side}"] = abs(values[f"elbow_{side}"])
        values["yaw"] = float(rng.uniform(-180, 180))
        return Pose(**values)


PRESETS: dict[str, Pose] = {
    "A-pose": Pose(),
    "T-pose": Pose(arm_raise_l=90, arm_raise_r=90, elbow_l=0, elbow_r=0, hip_out_l=3, hip_out_r=3),
    "walking": Pose(arm_raise_l=12, arm_raise_r=12, arm_forward_l=-20, arm_forward_r=25, elbow_l=15,
                    elbow_r=30, hip_l=-15, hip_r=25, knee_l=10, knee_r=35, hip_out_l=3, hip_out_r=3),
    "waving": Pose(arm_raise_l=12, arm_raise_r=150, elbow_l=10, elbow_r=60, arm_forward_r=10,
                   head_turn=-15),
    "sitting": Pose(arm_raise_l=15, arm_raise_r=15, arm_forward_l=30, arm_forward_r=30, elbow_l=60,
                    elbow_r=60, hip_l=90, hip_r=90, knee_l=90, knee_r=90, hip_out_l=8, hip_out_r=8),
    "arms up": Pose(arm_raise_l=170, arm_raise_r=170, elbow_l=0, elbow_r=0),
}


def preset(name: str) -> Pose:
    if name not in PRESETS:
        raise InputError(f"Unknown pose preset {name!r}. Presets: {', '.join(PRESETS)}.")
    return PRESETS[name]


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
