"""The Unlearning capability's typed requests (torch-free: the tab, the CLI and the action catalog import them).

Every field is declared once with ``backends.common.params.param``: its range, choices, default and help feed
the tab's controls, the CLI's options and the API's documented parameters. Defaults are the authors' CIFAR-10
config where it carries over (α 1.2, t_init 440, t ∈ [38, 712), forget coefficients 0.01, Adam β₁ = 0, value
clip 1); the learning rate and batch are CPU-sized (see docs/unlearn.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from backends.common.errors import InputError
from backends.common.params import param, seed_param
from backends.synth.scene import COLORS
from backends.synth.shape_images import CLASSES

from .classes import check_pair
from .text.words import TEACHERS, check_word_pair, parse_prompts

TEACHER_HELP = ("shapes: the label-conditional diffusion model of 32×32 shape renders (forget a shape class); text: "
                "3D Layout's embedded text-to-image model (forget a word — a colour or a shape — mapped to another of the "
                "same kind; one box's depth stays the condition).")
FORGET_HELP = (f"The class (shapes teacher: {', '.join(CLASSES)}) or word (text teacher: a colour — "
               f"{', '.join(COLORS)} — or a shape) the model must stop producing.")
SAFE_HELP = ("The class or word (of the same kind) whose score the forgotten one is aligned to (SFD's override label; "
             "on the text teacher the prompt with the word replaced).")


def check_choice(teacher: str, forget: str, safe: str) -> None:
    """The teacher's own check of the forget choice (classes for the shapes teacher, words for the text one)."""
    if teacher == "text":
        check_word_pair(forget, safe)
    else:
        check_pair(forget, safe)

TRAINED = ("sfd", "esd", "salun")
NAMES = {"sfd": "SFD", "esd": "ESD", "salun": "SalUn"}  # how the page and messages spell each trained method
SHIPPED = "shipped"


@dataclass
class DistilRequest:
    out_dir: Path = param(help="Where the run keeps its checkpoint, loss curves, previews and the trained network.")
    method: str = param("sfd", choices=TRAINED, label="Method",
                        help="sfd: Score Forgetting Distillation into a one-step generator; esd: fine-tune the teacher's "
                             "forget-class score onto a negatively guided target (the ESD baseline); salun: fine-tune "
                             "only the weights most salient for the forget class, its score relabelled as the safe "
                             "class's (the SalUn baseline).")
    forget: str = param("cube", label="Forget", help=FORGET_HELP)
    safe: str = param("sphere", label="Map it to", help=SAFE_HELP)
    teacher: str = param("shapes", choices=TEACHERS, label="Teacher", help=TEACHER_HELP)
    iterations: int = param(300, minimum=1, maximum=50_000, label="Iterations (paper: 50,000)",
                            help="Optimiser steps (SFD: one fake-score step and one generator step each).")
    batch: int = param(32, minimum=2, maximum=256, label="Batch (paper: 128)", help="Samples per loss term and step.")
    lr: float = param(1e-4, minimum=1e-7, maximum=1e-2, label="Learning rate (paper: 1e-5)",
                      help="Adam's rate for G and ψ (SFD; text teacher: ψ at 3×, the SD side's ratio) or the fine-tuned "
                           "model (ESD, SalUn).")
    alpha: float = param(1.2, minimum=0.0, maximum=2.0, step=0.05, label="α (SiD)",
                         help="SiD's α in [(f_p−f_ψ)·((f_p−x_g) − α(f_p−f_ψ))]/ω; the paper's 1.2.")
    t_init: int = param(440, minimum=1, maximum=999, label="t_init",
                        help="The timestep at which the one-step generator evaluates the teacher's network.")
    forget_coef: float = param(0.01, minimum=0.0, maximum=10.0, label="Forget coefficient",
                               help="Weight of the forgetting losses of G and ψ (the paper's 0.01; remain terms 1).")
    eta: float = param(1.0, minimum=0.0, maximum=10.0, step=0.1, label="ESD η",
                       help="Negative-guidance strength of the ESD target ε(∅) − η(ε(c_f) − ε(∅)).")
    saliency_fraction: float = param(0.5, minimum=0.01, maximum=1.0, step=0.01, label="SalUn saliency share",
                                     help="SalUn: the share of weights (largest |gradient| of the forget class's "
                                          "diffusion loss) that fine-tuning may change; the paper's 0.5.")
    retain_coef: float = param(1e-3, minimum=0.0, maximum=10.0, label="SalUn retain weight",
                               help="SalUn: weight of the diffusion loss on the other classes beside the remap loss "
                                    "(the authors' α = 1e-3).")
    replay_steps: int = param(20, minimum=2, maximum=200, label="SalUn teacher steps",
                              help="SalUn: DDIM steps of the teacher for its samples of every class (the forget and "
                                   "retain data of this data-free setting, 2 × batch per class, drawn once at the start).")
    preview_every: int = param(25, minimum=1, maximum=10_000, label="Preview every",
                               help="A preview grid (one row per class) and the loss curves every this many steps.")
    checkpoint_every: int = param(50, minimum=1, maximum=10_000,
                                  help="Save the run's full state every this many steps (and on Stop).")
    resume: bool = param(False, help="Continue the stopped run whose checkpoint is in the output folder.")
    seed: int = seed_param("Same seed and settings → the same training run.")

    def validate(self) -> None:
        check_choice(self.teacher, self.forget, self.safe)
        if self.teacher == "text" and self.method == "salun":
            raise InputError("SalUn is built for the shapes teacher only; on the text teacher choose sfd or esd.")


@dataclass
class EvaluateRequest:
    forget: str = param("cube", label="Forget", help=FORGET_HELP)
    safe: str = param("sphere", label="Map it to", help=SAFE_HELP)
    sfd_generator: str = param(SHIPPED, label="SFD generator",
                               help="'shipped' (the generator distilled for this choice), 'none', or the id of a Distil "
                                    "run (the CLI also takes a run's or a network's folder).")
    esd_model: str = param(SHIPPED, label="ESD model",
                           help="'shipped', 'none', or the id of an ESD Distil run (the CLI also takes a folder).")
    salun_model: str = param(SHIPPED, label="SalUn model",
                             help="'shipped' (skipped where no SalUn network ships for this choice), 'none', or the id "
                                  "of a SalUn Distil run (the CLI also takes a folder).")
    per_class: int = param(8, minimum=2, maximum=2000, label="Samples per class",
                           help="Images drawn per class (text teacher: per prompt) and method (the metrics use all "
                                "of them).")
    teacher_steps: int = param(20, minimum=2, maximum=1000, label="Teacher DDIM steps",
                               help="Steps of the teacher, of negative guidance and of the ESD and SalUn models (SFD takes one).")
    eta: float = param(1.0, minimum=0.0, maximum=10.0, step=0.1, label="Negative guidance η",
                       help="Sampling-time negative guidance for the forgotten class: ε(∅) − η(ε(c_f) − ε(∅)) "
                              "(text teacher: for the prompts that name the forgotten word).")
    metrics: bool = param(True, help="Compute forget rate, accuracy and Fréchet distance (off: only the grid).")
    out_dir: Path | None = param(None, help="Where the grids and numbers are written (default: the run's folder).")
    seed: int = seed_param("Same seed → the same noise for every method.")
    teacher: str = param("shapes", choices=TEACHERS, label="Teacher", help=TEACHER_HELP)
    prompts: str = param("", label="Prompts (text teacher)",
                         help="Text teacher: prompts separated by ';' or new lines, each naming a colour and a shape "
                              "('a red cube; a red sphere; a blue cube'); the samples of those naming the forgotten word "
                              "show what comes out instead. Empty: all 40 'a <colour> <shape>' prompts.")
    guidance_scale: float = param(5.0, minimum=1.0, maximum=15.0, step=0.5, label="CFG scale (text teacher)",
                                  help="Text teacher: classifier-free guidance of the teacher, ESD and negative "
                                       "guidance (the 3D Layout tab's 5 for the embedded model); SFD takes one "
                                       "unguided step.")

    def validate(self) -> None:
        check_choice(self.teacher, self.forget, self.safe)
        if self.teacher == "text":
            parse_prompts(self.prompts)


def is_run_id(spec: str) -> bool:
    """A Distil run's id (12 hex digits, as the tab shows it) rather than a folder."""
    return bool(re.fullmatch(r"[0-9a-f]{12}", (spec or "").strip().lower()))
