"""What a person sets of an avatar's body, as plain numbers: the pose sliders (degrees) with their presets,
and anny's shape parameters. Torch-free, so requests, the tab and run cards can hold them; ``pose`` turns
sliders into bone transforms and ``body`` shapes the mesh (both re-export these)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np

from backends.common.errors import InputError

PHENOTYPES = ("gender", "age", "muscle", "weight", "height", "proportions")

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



@dataclass(frozen=True)
class Phenotype:
    """anny's shape parameters, each in [0, 1] (0.5 = average)."""

    gender: float = 0.5
    age: float = 0.5
    muscle: float = 0.5
    weight: float = 0.5
    height: float = 0.5
    proportions: float = 0.5

    def __post_init__(self):
        for name in PHENOTYPES:
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0.0 <= float(value) <= 1.0):
                raise InputError(f"The body's {name} must be a number between 0 and 1, not {value!r}.")

    def as_dict(self) -> dict[str, float]:
        return {name: float(getattr(self, name)) for name in PHENOTYPES}

    @staticmethod
    def random(rng: np.random.Generator) -> Phenotype:
        """A plausible adult: age kept in the adult range, the rest spread over [0.1, 0.9]."""
        values = {name: float(rng.uniform(0.1, 0.9)) for name in PHENOTYPES}
        values["age"] = float(rng.uniform(0.45, 0.9))
        return Phenotype(**values)
