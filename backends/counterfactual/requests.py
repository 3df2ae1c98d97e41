"""The Counterfactual capability's typed request (torch-free: the tab and the action catalog import it)."""

from __future__ import annotations

from dataclasses import dataclass

from backends.common.errors import InputError
from backends.common.params import param, seed_param

from .models import DEFAULT_BRIDGE, DEFAULT_CLASSIFIER

GUIDANCE = ("tweedie", "noisy", "none")


@dataclass
class CounterfactualRequest:
    image: object = param(help="The image to change (a path, a PIL image or an H×W×3 array).")
    mask: object = param(help="The region that may change: H×W, > 0 inside (draw one, or use the automatic region).")
    target: str | int = param(help="The class the classifier should see after the edit (name or index).")
    num_samples: int = param(2, minimum=1, maximum=8, label="Samples", cli=("--samples",),
                             help="How many different counterfactuals to draw (same settings, other noise).")
    num_inference_steps: int = param(50, minimum=4, maximum=200, label="Network calls (paper: 100)", cli=("--steps",),
                                     help="Steps of the bridge (I2SB, an image-to-image diffusion): more is slower, "
                                          "finer; the paper uses 100.")
    # the embedded models flip most often at s = 16 (a sweep of 1.5-32 on 20 held-out images, 30 calls:
    # 0.40 / 0.75 / 0.80 / 0.90 / 0.80 for 1.5 / 4 / 8 / 16 / 32); bench.counterfactual reports the sweep
    guidance_scale: float = param(16.0, minimum=0.0, maximum=40.0, step=0.5, label="Guidance scale s (embedded: 16)",
                                  cli=("--scale",), help="How hard each step pushes the region towards the target class.")
    start_fraction: float = param(0.6, minimum=0.1, maximum=1.0, step=0.05, label="Start τ (fraction of the bridge)",
                                  cli=("--tau",), help="How much of the region is re-drawn from noise: higher changes more.")
    seed: int = seed_param("Same seed and settings → the same counterfactuals.")
    guidance: str = param("tweedie", choices=GUIDANCE,
                          help="Where the classifier's gradient is taken: on the denoised guess (tweedie, the paper's), "
                               "on the noisy image, or none.")
    stabilize: bool = param(True, help="Normalise the classifier's gradient by Adam-style moments and the first gradient's norm "
                                       "(RCSB's stabiliser); off: the raw gradient.")
    preview_every: int = param(5, minimum=1, maximum=1000, help="A preview every this many steps.")
    bridge: str = param(DEFAULT_BRIDGE, label="Bridge",
                        help="The region-constrained Schrödinger bridge that repaints the region (a registry id).")
    classifier: str = param(DEFAULT_CLASSIFIER, label="Classifier",
                            help="The classifier whose decision the counterfactual flips; it also guides the bridge.")

    def validate(self) -> None:
        if self.mask is None:
            raise InputError("Draw the region that may change (or use the automatic region) first.")


@dataclass
class RegionRequest:
    """The automatic region: Integrated Gradients of the classifier's decision, the strongest cells kept."""

    image: object = param(help="The image (a path, a PIL image or an H×W×3 array).")
    area: float = param(0.3, minimum=0.05, maximum=0.8, step=0.05, label="Auto region: area budget",
                        help="The largest share of the image the automatic region may cover.")
    cell: int = param(4, choices=(2, 4, 8), label="cell (px)",
                      help="The region is made of square cells this many pixels wide.")
    target: str | int | None = param(None, help="The class whose evidence is attributed (default: the prediction).")
    seed: int = seed_param("Same seed → the same region (Integrated Gradients' baseline noise).")
