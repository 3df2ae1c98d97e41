"""The 3D Layout capability's typed request (torch-free: the tab and the action catalog import it).

A scene is its model, its settings and the layouts it went through: one :class:`SceneRequest` says
all of that, so a run card of any stage replays the whole scene to the same pixels. *Generate* has no
earlier layouts; *Next stage* lists every stage's layout so far; *Rebuild* is a card's request again.

Its fields are declared with ``backends.common.params.param``: their ranges, choices, defaults and help are
the tab's controls, the CLI's options, the API's documented parameters and the checks every run makes
(``check_request``); :meth:`SceneRequest.validate` keeps only what a declaration cannot say (the layouts parse).
"""

from __future__ import annotations

from dataclasses import dataclass

from backends.common.errors import InputError
from backends.common.params import param, seed_param

from .layout import Layout
from .models import DEFAULT_MODEL, MODEL_CHOICES

METHODS = ("bas", "masactrl", "blend")  # Build-A-Scene | MasaCtrl mutual self-attention | blending alone
DSA_MASKINGS = ("multiply", "neg_inf")  # the published multiplicative masking | −inf (an ablation)
MAX_HISTORY = 64  # earlier layouts a request may replay (a card is an upload: its work is bounded)


@dataclass
class SceneRequest:
    layout: dict = param(help="The layout to reach: the layout JSON (scene_prompt and boxes, each with prompt, "
                              "center and size in metres, yaw_deg).")
    model: str = param(DEFAULT_MODEL, choices=MODEL_CHOICES, label="Model",
                       help="Embedded: the small model trained here; sd15 (+ LooseControl): the paper's stack once "
                            "downloaded.")
    seed: int = seed_param("Same seed, same layout, same settings → the same pictures.")
    num_inference_steps: int = param(20, minimum=2, maximum=50, label="DDIM steps (paper: 20)", cli=("--steps",),
                                     help="How many denoising steps make each picture: fewer is faster, rougher.")
    guidance_scale: float | None = param(None, minimum=0.0, maximum=15.0, step=0.5, label="CFG (embedded 5; SD 7.5)",
                                         cli=("--guidance",),
                                         help="Classifier-free guidance: how strongly the picture follows the prompt "
                                              "(not given: the model's own).")
    method: str = param("bas", choices=METHODS, label="Stage method",
                        help="How a new stage keeps the earlier objects: the paper's method (bas) or a baseline "
                             "(masactrl, blend).")
    blend_fraction: float | None = param(None, minimum=0.0, maximum=1.0, step=0.05,
                                         label="Blended fraction of steps (published 0.9; embedded model 0.95)",
                                         cli=("--blend",),
                                         help="For this share of the steps, everything outside the edited box is "
                                              "copied from the previous stage (latent blending). Not given: the "
                                              "model's own (published 0.9, embedded 0.95).")
    dsa_start_fraction: float = param(0.5, minimum=0.0, maximum=1.0, step=0.05, label="DSA from this fraction of the steps",
                                      help="Dynamic Self-Attention: from here on, the new object also looks at the "
                                           "previous stage's objects, so it fits in with them.")
    dsa_masking: str = param("multiply", choices=DSA_MASKINGS, label="DSA key/value masking",
                             help="How DSA hides the parts of the previous stage the new object may not copy: "
                                  "multiply (the published code) or neg_inf (an ablation).")
    # the layouts reached before ``layout``, in turn (the tab: every earlier stage's, stage 0 the empty
    # scene; the CLI: the layouts it was given): a replay reaches them again, the same stages
    history: list[dict] = param(default_factory=list,
                                help=f"The layouts reached before this one, in turn (at most {MAX_HISTORY}): a "
                                     "replay reaches them again, stage by stage.")
    # the live scene this continues on the server (the tab's key): its kept tensors spare recomputing
    # ``history``; anywhere else (a CLI replay, another worker) the history is recomputed, same pixels.
    # Not a setting of the user's: the server's handle of a browser session's scene.
    scene_key: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.layout, Layout):
            self.layout = self.layout.to_dict()
        if isinstance(self.history, list | tuple):
            self.history = [h.to_dict() if isinstance(h, Layout) else h for h in self.history]

    def validate(self) -> None:
        """What the field declarations cannot say: the history is a bounded list and every layout parses."""
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
