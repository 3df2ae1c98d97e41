"""The Counterfactual capability's typed request (torch-free: the tab and the action catalog import it)."""

from __future__ import annotations

from dataclasses import dataclass

from backends.common.errors import InputError
from backends.common.seeding import check_seed

from .models import DEFAULT_BRIDGE, DEFAULT_CLASSIFIER


@dataclass
class CounterfactualRequest:
    image: object  # path, PIL, or H×W×3 array
    mask: object  # H×W (any size; > 0 = editable) — draw one or use suggest_region
    target: str | int
    num_samples: int = 2
    num_inference_steps: int = 100
    # the embedded models flip most often at s = 16 (a sweep of 1.5-32 on 20 held-out images, 30 calls:
    # 0.40 / 0.75 / 0.80 / 0.90 / 0.80 for 1.5 / 4 / 8 / 16 / 32); bench.counterfactual reports the sweep
    guidance_scale: float = 16.0
    start_fraction: float = 0.6
    seed: int = 0
    guidance: str = "tweedie"
    stabilize: bool = True
    preview_every: int = 5
    bridge: str = DEFAULT_BRIDGE  # the models, by registry id: part of the request so a run card names them
    classifier: str = DEFAULT_CLASSIFIER

    def validate(self) -> None:
        if not isinstance(self.num_samples, int) or not 1 <= self.num_samples <= 16:
            raise InputError(f"Samples must be a whole number from 1 to 16, got {self.num_samples!r}.")
        if not isinstance(self.num_inference_steps, int) or not 2 <= self.num_inference_steps <= 1000:
            raise InputError(f"Steps must be a whole number from 2 to 1000, got {self.num_inference_steps!r}.")
        if not 0.0 <= float(self.guidance_scale) <= 100.0:
            raise InputError(f"Guidance scale must be between 0 and 100, got {self.guidance_scale}.")
        if not 0.05 <= float(self.start_fraction) <= 1.0:
            raise InputError(f"Start τ must be between 0.05 and 1, got {self.start_fraction}.")
        if self.guidance not in ("tweedie", "noisy", "none"):
            raise InputError(f"Guidance must be tweedie, noisy or none, got {self.guidance!r}.")
        check_seed(self.seed)
        if self.mask is None:
            raise InputError("Draw the region that may change (or use the automatic region) first.")
