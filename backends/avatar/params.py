"""What a person sets of an avatar's body, as plain numbers: the pose sliders (degrees) with their presets,
and anny's shape parameters. Torch-free, so requests, the tab and run cards can hold them; ``pose`` turns
sliders into bone transforms and ``body`` shapes the mesh (both re-export these)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from backends.common.errors import InputError
from backends.common.params import check_value, fields_of, param

PHENOTYPES = ("gender", "age", "muscle", "weight", "height", "proportions")


def _slider(default: float, lo: float, hi: float, label: str, help: str):
    return param(default, minimum=lo, maximum=hi, step=1, label=label, help=help + " (degrees)")


@dataclass(frozen=True)
class Pose:
    """Angles in degrees, each declared once with its range, label and help (the tab's sliders, the API's named
    pose parameters and the checks come from here). Defaults are the neutral standing pose (arms 45° down, legs
    straight)."""

    yaw: float = _slider(0.0, -180.0, 180.0, "Turn (yaw)", "The whole body turns about the vertical axis")
    arm_raise_l: float = _slider(45.0, 0.0, 180.0, "Left arm raise", "Left arm: 0 = down, 90 = horizontal, 180 = up")
    arm_raise_r: float = _slider(45.0, 0.0, 180.0, "Right arm raise",
                                 "Right arm: 0 = down, 90 = horizontal, 180 = up")
    arm_forward_l: float = _slider(0.0, -60.0, 120.0, "Left arm forward", "Swing the raised left arm forward")
    arm_forward_r: float = _slider(0.0, -60.0, 120.0, "Right arm forward", "Swing the raised right arm forward")
    elbow_l: float = _slider(5.0, 0.0, 150.0, "Left elbow", "Bend the left elbow: 0 = straight forearm")
    elbow_r: float = _slider(5.0, 0.0, 150.0, "Right elbow", "Bend the right elbow: 0 = straight forearm")
    hip_l: float = _slider(0.0, -40.0, 120.0, "Left hip (forward)",
                           "Left thigh forward (flexion); negative = backward")
    hip_r: float = _slider(0.0, -40.0, 120.0, "Right hip (forward)",
                           "Right thigh forward (flexion); negative = backward")
    hip_out_l: float = _slider(5.0, -10.0, 60.0, "Left hip (out)", "Left thigh sideways (abduction)")
    hip_out_r: float = _slider(5.0, -10.0, 60.0, "Right hip (out)", "Right thigh sideways (abduction)")
    knee_l: float = _slider(0.0, 0.0, 150.0, "Left knee", "Bend the left knee: 0 = straight leg")
    knee_r: float = _slider(0.0, 0.0, 150.0, "Right knee", "Bend the right knee: 0 = straight leg")
    spine: float = _slider(0.0, -30.0, 60.0, "Bend forward", "Bend the spine forward; negative = backward")
    head_turn: float = _slider(0.0, -70.0, 70.0, "Head turn", "Turn the head: + = left, - = right")

    def __post_init__(self):
        for name, spec in fields_of(Pose).items():
            value = getattr(self, name)
            try:
                object.__setattr__(self, name, check_value(spec, value))
            except InputError:
                raise InputError(f"The pose slider '{name}' must be {spec.accepts().lower()} degrees, "
                                 f"not {value!r}.") from None

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


# slider → (lowest, highest) in degrees, from the declarations above
SLIDER_RANGES: dict[str, tuple[float, float]] = {
    name: (float(spec.param.minimum), float(spec.param.maximum)) for name, spec in fields_of(Pose).items()}

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
