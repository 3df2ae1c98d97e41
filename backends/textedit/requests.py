"""The Text in Image capability's typed requests, checked at the boundary (torch-free: the tab and the
action catalog import them; ``service`` and the action modules re-export them).

Every field a person sets is declared once with ``backends.common.params.param``: its range, choices, default and
one-line help, from which the tab's controls, the CLI's options, the API's documented parameters and the range
checks (``check_request``) are made. A request names its model, so a run card says which model made the run.
``validate()`` checks the declarations and then what they cannot say: text the model cannot write (empty, too
long or too short for the model, characters outside its alphabet), a template the embedded model does not know,
a start step past the steps, a region that is no box.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from backends.common.errors import InputError
from backends.common.params import check_request, param, seed_param

from .data import HELD_OUT_WORDS
from .data import TEMPLATES as TRAINING_TEMPLATES
from .models import DEFAULT_BLOCK_LIST, DEFAULT_MODEL, MODEL_CHOICES, PRESETS, Preset
from .networks import ALPHABET, MAX_LETTERS, MIN_LETTERS, PROMPT_WORDS

TEMPLATES = tuple(TRAINING_TEMPLATES.values())  # the embedded model's templates, offered first in the tab
DEFAULT_TEMPLATE = TEMPLATES[0]  # "a sign that says"
MAX_TEMPLATE_CHARS = 80
MAX_STEPS = 100
MAX_EXTRA_PAIRS = 16
MAX_BLOCKED = 200
TARGETS = ("localized", "all", "random")
MAX_TRAIN_STEPS = 500
MAX_EVAL_WORDS = len(HELD_OUT_WORDS)  # every held-out word once
PRINTABLE = "".join(chr(c) for c in range(32, 127) if chr(c) != '"')


@dataclass(frozen=True)
class TextRules:
    """What text a model can be asked to write, and how its images are read."""

    alphabet: str  # characters it can write (compared case-insensitively)
    max_chars: int
    ocr_detect: bool  # run the OCR's text detector (the text is not the whole image)
    case_insensitive: bool = True
    min_chars: int = 1  # shorter words than it was trained on come out as some other word


EMBEDDED_RULES = TextRules(ALPHABET, MAX_LETTERS, ocr_detect=False, min_chars=MIN_LETTERS)
PUBLISHED_RULES = TextRules(PRINTABLE, 40, ocr_detect=True, case_insensitive=False)


def rules_for(model: str) -> TextRules:
    if model not in MODEL_CHOICES:
        raise InputError(f"Unknown Text in Image model {model!r}; choose one of {', '.join(MODEL_CHOICES)}.")
    return EMBEDDED_RULES if model == DEFAULT_MODEL else PUBLISHED_RULES


def check_text(text: str, model: str, what: str = "The text") -> str:
    """The text to write, stripped; ``InputError`` when the model cannot write it."""
    rules = rules_for(model)
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{what} is empty: type the word to write in the image.")
    text = text.strip()
    if len(text) > rules.max_chars:
        raise InputError(f"{what} has {len(text)} characters; this model writes at most {rules.max_chars}.")
    if len(text) < rules.min_chars:
        raise InputError(f"{what} has {len(text)} character(s); this model writes words of at least "
                         f"{rules.min_chars} (it was trained on {rules.min_chars}–{rules.max_chars} letters, "
                         "and a shorter word comes out as another one).")
    if '"' in text:
        raise InputError(f"{what} cannot contain double quotes (they delimit the text in the prompt).")
    probe = text.lower() if rules.case_insensitive else text
    bad = sorted({ch for ch in probe if ch not in rules.alphabet})
    if bad:
        shown = " ".join(repr(ch) for ch in bad)
        allowed = "the letters a–z" if rules is EMBEDDED_RULES else "printable ASCII characters"
        raise InputError(f"{what} has characters this model cannot write: {shown}. It writes {allowed}.")
    return text


def check_template(template: str, model: str) -> str:
    if not isinstance(template, str) or not template.strip():
        raise InputError("The prompt template is empty: write something like 'a sign that says'.")
    template = " ".join(template.split())
    if len(template) > MAX_TEMPLATE_CHARS:
        raise InputError(f"The prompt template has {len(template)} characters; keep it under {MAX_TEMPLATE_CHARS}.")
    if '"' in template:
        raise InputError("The prompt template cannot contain double quotes; the text is added in quotes after it.")
    if model == DEFAULT_MODEL:
        unknown = [w for w in re.split(r"[\s.,:]+", template.lower()) if w and w not in PROMPT_WORDS]
        if unknown:
            raise InputError(f"The embedded model does not know the words {', '.join(map(repr, unknown))}; "
                             f"its templates use: {', '.join(PROMPT_WORDS)}.")
    return template


def prompt_for(template: str, text: str) -> str:
    return f'{template} "{text}"'


def layers_list(text: str | Sequence[str] | None) -> list[str] | None:
    """Layer names or indices as typed ("3, 4; up_blocks.1.attentions.0.transformer_blocks.0.attn2"), or None when nothing is typed."""
    if text is None:
        return None
    items = text.replace(";", ",").split(",") if isinstance(text, str) else list(text)
    items = [str(x).strip() for x in items if str(x).strip()]
    return items or None


@dataclass(kw_only=True)
class Sampling:
    """What every action shares: the model, the prompt template, the seed and the sampler settings."""

    model: str = param(DEFAULT_MODEL, choices=MODEL_CHOICES, label="Model",
                       help="The diffusion model that writes: the small embedded one, or a published one once "
                            "downloaded.")
    template: str = param(DEFAULT_TEMPLATE, label="Prompt template",
                          help="The prompt before the quoted text (the embedded model knows only its training "
                               "templates: " + ", ".join(f"'{t}'" for t in TEMPLATES) + ").")
    seed: int = seed_param("Same seed and settings → the same image; every action draws its noise from it.")
    num_inference_steps: int | None = param(None, minimum=1, maximum=MAX_STEPS, label="Steps", cli=("--steps",),
                                            help="Denoising steps per image: fewer is faster and rougher; empty: "
                                                 "the model's preset (the embedded model's: "
                                                 f"{PRESETS[DEFAULT_MODEL].num_inference_steps}).")
    guidance_scale: float | None = param(None, minimum=1.0, maximum=30.0, label="Guidance scale", cli=("--guidance",),
                                         help="Classifier-free guidance: how closely the image follows the "
                                              "prompt; empty: the model's preset.")

    def validate(self) -> None:
        check_request(self)  # every declared field in its range (what Action.run_here checks too)
        self.template = check_template(self.template, self.model)

    @property
    def preset(self) -> Preset:
        return PRESETS[self.model]

    @property
    def steps(self) -> int:
        return int(self.num_inference_steps or self.preset.num_inference_steps)

    @property
    def guidance(self) -> float:
        return float(self.preset.guidance_scale if self.guidance_scale is None else self.guidance_scale)

    def check_start(self, start: int | None, default: int) -> int:
        if start is None:
            return min(default, self.steps)  # the preset's start, within fewer steps than the preset's
        start = int(start)
        if not 0 <= start <= self.steps:
            raise InputError(f"The start step must be between 0 and the number of steps ({self.steps}); got {start}.")
        return start

    def pipe_kwargs(self) -> dict:
        """Sampler arguments of a pipeline call (a fresh generator: every call draws the seed's noise)."""
        from backends.common.seeding import torch_generator

        return dict(num_inference_steps=self.steps, guidance_scale=self.guidance, generator=torch_generator(self.seed))

    @classmethod
    def from_dict(cls, values: dict):
        """A request from a dict of its fields (unknown keys are an error, not ignored)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise InputError(f"The run card has fields a {cls.__name__} does not take: {', '.join(unknown)}.")
        return cls(**values)


@dataclass(kw_only=True)
class GenerateRequest(Sampling):
    text: str = param(label="Text in the image",
                      help=f"The word to write (the embedded model: {MIN_LETTERS}–{MAX_LETTERS} letters a–z; "
                           f"a published one: up to {PUBLISHED_RULES.max_chars} printable characters).")

    def validate(self) -> None:
        super().validate()
        self.text = check_text(self.text, self.model)

    @property
    def prompt(self) -> str:
        return prompt_for(self.template, self.text)


@dataclass(kw_only=True)
class AdapterRequest(GenerateRequest):
    """Generate with a LoRA adapter file (``adapter.safetensors`` of a fine-tune) applied."""

    adapter: Path | None = param(None, label="Adapter (.safetensors)",
                                 help="A LoRA adapter file: the adapter.safetensors that Fine-tune writes.")

    def validate(self) -> None:
        super().validate()
        if self.adapter is None or not str(self.adapter):
            raise InputError("Upload an adapter (.safetensors) or fine-tune first.")
        self.adapter = Path(self.adapter)
        if not self.adapter.is_file():
            raise InputError(f"The adapter file {self.adapter.name} does not exist.")


@dataclass(kw_only=True)
class LocalizeRequest(Sampling):
    text: str = param(label="Text A", help="Text A: the word of the unpatched image.")
    new_text: str = param(label="Text B (patched in)",
                          help="One layer at a time takes this word's keys/values; a layer that makes the image "
                               "read it writes the text.")
    extra_pairs: int = param(0, minimum=0, maximum=MAX_EXTRA_PAIRS, label="Extra held-out word pairs",
                             help="More word pairs, averaged for a steadier ranking; each adds a full scan.")
    start_step: int = param(0, minimum=0, maximum=MAX_STEPS, label="Patch from step",
                            help="The patch acts from this denoising step on (0: all steps); later starts leave "
                                 "more of the original.")
    per_head: bool = param(True, label="Per head too", cli=("--heads",),
                           help="Also patch every attention head alone (the heat map); slower.")
    top_k: int | None = param(0, minimum=0, label="Top-k (0: choose by the rule)",  # None too (older cards)
                              help="Keep the k best layers; 0: those within 75% of the best that read B more "
                                   "than A.")

    def validate(self) -> None:
        super().validate()
        self.text = check_text(self.text, self.model, "The original text")
        self.new_text = check_text(self.new_text, self.model, "The new text")
        if self.text.lower() == self.new_text.lower():
            raise InputError("The original and the new text are the same; the scan needs two different texts.")
        self.start_step = self.check_start(self.start_step, 0)

    def pairs(self) -> list[tuple[str, str]]:
        """(A, B) texts: the asked pair, then held-out words paired at random (seeded)."""
        rng = np.random.default_rng(self.seed)
        words = [w for w in HELD_OUT_WORDS if w not in (self.text.lower(), self.new_text.lower())]
        picks = rng.choice(len(words), size=(int(self.extra_pairs), 2), replace=True)
        extra = [(words[i], words[j if j != i else (j + 1) % len(words)]) for i, j in picks]
        return [(self.text, self.new_text), *extra]


@dataclass(kw_only=True)
class EditRequest(Sampling):
    text: str = param(label="Original text", help="The text of the original image (prompt A).")
    new_text: str = param(label="New text", help="The word to write instead; only the chosen layers see it.")
    layers: list[str] | None = param(None, label="Layers",
                                     help="The layers that take the new word: names or indices, comma-separated "
                                          "(e.g. '3, 4'); empty: the model's localized layers.")
    start_step: int | None = param(None, minimum=0, maximum=MAX_STEPS, label="Patch from step",
                                   help="The layers take the new word from this step on; earlier steps keep the "
                                        "original's layout; empty: the model's preset (the embedded model's: "
                                        f"{PRESETS[DEFAULT_MODEL].edit_start_step}).")
    region: tuple[int, int, int, int] | None = param(None, label="Region",
                                                     help="A box x0, y0, x1, y1 in image pixels over the text: "
                                                          "outside it the original is kept; empty: the whole image.")

    def validate(self) -> None:
        super().validate()
        self.text = check_text(self.text, self.model, "The original text")
        self.new_text = check_text(self.new_text, self.model, "The new text")
        self.start_step = self.check_start(self.start_step, self.preset.edit_start_step)
        self.layers = layers_list(self.layers)
        if not (self.layers or self.preset.edit_layers):
            raise InputError("This model's text layers are not known yet: run Localize first, or name the layers.")
        if self.region is not None:
            if len(self.region) != 4:
                raise InputError("The region must be a box x0, y0, x1, y1 in image pixels.")
            x0, y0, x1, y1 = (int(v) for v in self.region)
            if x1 <= x0 or y1 <= y0 or min(x0, y0) < 0:
                raise InputError(f"The region {self.region} is empty or outside the image; draw a box over the text.")
            self.region = (x0, y0, x1, y1)

    @property
    def chosen_layers(self) -> list[str]:
        return list(self.layers or self.preset.edit_layers)


def check_block_list(words: Sequence[str]) -> list[str]:
    """Lowercased, unique, non-empty entries of letters (and digits) only."""
    if isinstance(words, str):
        words = re.split(r"[\s,;]+", words)
    out = []
    for w in words:
        w = str(w).strip().lower()
        if not w:
            continue
        if not re.fullmatch(r"[a-z0-9]{1,32}", w):
            raise InputError(f"Block-list entries are single words of letters or digits (at most 32); got {w!r}.")
        if w not in out:
            out.append(w)
    if len(out) > MAX_BLOCKED:
        raise InputError(f"The block list has {len(out)} words; at most {MAX_BLOCKED} are allowed.")
    return out


def blocked_words(text: str, block_list: Sequence[str]) -> list[str]:
    """The block-list words the text contains (case-insensitive, also inside longer words)."""
    t = text.lower()
    return [w for w in block_list if w in t]


def benign_words() -> tuple[str, ...]:
    from .data import COMMON_WORDS

    return tuple(w for w in COMMON_WORDS if w not in DEFAULT_BLOCK_LIST)


@dataclass(kw_only=True)
class ProtectRequest(Sampling):
    text: str = param(label="Text to generate",
                      help="The word asked for; a blocked one is written as a benign word instead.")
    # typed as text (the tab's box, the CLI's option), or as a list; validate() makes it the checked list
    block_list: str | list[str] = param(", ".join(DEFAULT_BLOCK_LIST), label="Block list (editable)",
                                        help="Words never written, comma-separated: a prompt asking for one gets a "
                                             "benign word through the text layers instead.")
    benign_text: str | None = param(None, label="Benign word", cli=("--benign",),
                                    help="What a blocked word is replaced with; empty: a benign word drawn with "
                                         "the seed.")
    layers: list[str] | None = param(None, label="Layers",
                                     help="The layers that take the benign word: names or indices, "
                                          "comma-separated; empty: the model's toxic-text layers.")
    start_step: int | None = param(None, minimum=0, maximum=MAX_STEPS, label="Patch from step",
                                   help="The layers take the benign word from this step on; empty: the model's "
                                        "preset.")

    def validate(self) -> None:
        super().validate()
        self.text = check_text(self.text, self.model)
        self.block_list = check_block_list(self.block_list)
        if self.benign_text is not None and str(self.benign_text).strip():
            self.benign_text = check_text(self.benign_text, self.model, "The benign text")
            if blocked_words(self.benign_text, self.block_list):
                raise InputError(f"The benign text “{self.benign_text}” is itself on the block list.")
        else:
            self.benign_text = None
        self.start_step = self.check_start(self.start_step, self.preset.toxic_start_step)
        self.layers = layers_list(self.layers)

    def benign(self) -> str:
        if self.benign_text:
            return self.benign_text
        pool = [w for w in benign_words() if not blocked_words(w, self.block_list)]
        return pool[np.random.default_rng(self.seed).integers(len(pool))]


@dataclass(kw_only=True)
class FinetuneRequest(Sampling):
    target: str = param("localized", choices=TARGETS, label="LoRA on",
                        help="The localized layers (the paper), every attention layer, or as many random layers "
                             "(the control).")
    layers: list[str] | None = param(None, label="Layers",  # "random" draws as many as these
                                     help="The localized layers: names or indices, comma-separated; empty: the "
                                          "model's.")
    train_steps: int = param(40, minimum=1, maximum=MAX_TRAIN_STEPS, label="Training steps",
                             help="Optimizer steps on renders of training words, the same for every target.")
    rank: int = param(4, minimum=1, maximum=64, label="LoRA rank",
                      help="The rank of each LoRA update: higher trains more parameters.")
    learning_rate: float = param(1e-4, minimum=1e-6, maximum=1e-2, label="Learning rate", cli=("--lr",),
                                 help="AdamW step size of the LoRA weights.")
    batch_size: int = param(8, minimum=1, maximum=32, label="Batch",
                            help="Word images per training step: more is steadier and slower.")
    eval_words: int = param(12, minimum=1, maximum=MAX_EVAL_WORDS, label="Held-out words to read before/after",
                            help="Words never trained on, generated and read by OCR before and after: the score.")

    def validate(self) -> None:
        super().validate()
        if self.model != DEFAULT_MODEL:
            raise InputError("Fine-tuning runs on the embedded model here; the published models need a GPU and "
                             "the paper's LAION-OCR data.")
        self.layers = layers_list(self.layers)
        if self.target != "all" and not (self.layers or self.preset.edit_layers):
            raise InputError("This model's text layers are not known yet: run Localize first, or name the layers.")
