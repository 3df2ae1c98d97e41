"""The Unlearning capability (Score Forgetting Distillation): its name, tab, group and paper (``backends.common.capability``)."""

from backends.common.capability import Capability

SPEC = Capability(
    name="unlearn",
    title="Unlearning",
    group="Images & 3D",
    paper="Score Forgetting Distillation",
    summary="make a diffusion model forget a shape and distil it into a one-step generator; compare with ESD "
            "fine-tuning and negative guidance",
)
