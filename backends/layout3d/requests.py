"""The 3D Layout capability's typed request (torch-free: the tab and the action catalog import it).

A scene is its model, its settings and the layouts it went through: one :class:`SceneRequest` says
all of that, so a run card of any stage replays the whole scene to the same pixels. *Generate* has no
earlier layouts; *Next stage* lists every stage's layout so far; *Rebuild* is a card's request again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from backends.common.errors import InputError
from backends.common.seeding import check_seed

from .layout import Layout
from .models import DEFAULT_MODEL, MODEL_CHOICES

METHODS = ("bas", "masactrl", "blend")  # Build-A-Scene | MasaCtrl mutual self-attention | blending alone
MAX_HISTORY = 64  # earlier layouts a request may replay (a card is an upload: its work is bounded)


@dataclass
class SceneRequest:
    layout: dict  # the layout to reach (as the layout JSON: scene_prompt and boxes); a Layout is taken too
    model: str = DEFAULT_MODEL  # the model by registry id: part of the request so a run card names it
    seed: int = 0
    num_inference_steps: int = 20
    guidance_scale: float | None = None  # None: the model's default
    method: str = "bas"
    blend_fraction: float | None = None  # None: the model's default (published 0.9; embedded 0.95)
    dsa_start_fraction: float = 0.5
    dsa_masking: str = "multiply"
    # the layouts reached before ``layout``, in turn (the tab: every earlier stage's, stage 0 the empty
    # scene; the CLI: the layouts it was given): a replay reaches them again, the same stages
    history: list[dict] = field(default_factory=list)
    # the live scene this continues on the server (the tab's key): its kept tensors spare recomputing
    # ``history``; anywhere else (a CLI replay, another worker) the history is recomputed, same pixels
    scene_key: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.layout, Layout):
            self.layout = self.layout.to_dict()
        self.history = [h.to_dict() if isinstance(h, Layout) else h for h in self.history]

    def validate(self) -> None:
        if self.model not in MODEL_CHOICES:
            raise InputError(f"Unknown model {self.model!r}; choose one of {', '.join(MODEL_CHOICES)}.")
        check_seed(self.seed)
        if not isinstance(self.num_inference_steps, int) or not 1 <= self.num_inference_steps <= 200:
            raise InputError(f"Steps must be a whole number from 1 to 200, got {self.num_inference_steps!r}.")
        if self.guidance_scale is not None and not 0.0 <= float(self.guidance_scale) <= 30.0:
            raise InputError("Guidance scale must be between 0 and 30.")
        if self.blend_fraction is not None and not 0.0 <= float(self.blend_fraction) <= 1.0:
            raise InputError("The blended fraction of steps must be between 0 and 1.")
        if self.method not in METHODS:
            raise InputError(f"Method must be one of {', '.join(METHODS)}.")
        if self.dsa_masking not in ("multiply", "neg_inf"):
            raise InputError("DSA masking must be 'multiply' (the published code) or 'neg_inf'.")
        if not 0.0 <= float(self.dsa_start_fraction) <= 1.0:
            raise InputError("The DSA start must be a fraction of the steps between 0 and 1.")
        if not isinstance(self.history, list) or len(self.history) > MAX_HISTORY:
            raise InputError(f"A scene replays at most {MAX_HISTORY} earlier layouts.")
        self.layouts()  # every layout parses (a clear message before any work)

    def target(self) -> Layout:
        return Layout.from_json(self.layout)

    def earlier(self) -> list[Layout]:
        return [Layout.from_json(h) for h in self.history]

    def layouts(self) -> list[Layout]:
        """Every layout the scene reaches, in turn: the history, then the target."""
        return [*self.earlier(), self.target()]

    def settings_key(self) -> tuple:
        """What makes two scenes' stages the same, given the same layouts: the model and every setting."""
        return (self.model, self.seed, self.num_inference_steps, self.guidance_scale, self.method,
                self.blend_fraction, self.dsa_start_fraction, self.dsa_masking)
