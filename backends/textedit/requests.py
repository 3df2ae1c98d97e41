"""The Text in Image capability's typed requests, checked at the boundary (torch-free: the tab and the
action catalog import them; ``service`` and the action modules re-export them).

A request names its model, so a run card says which model made the run. ``validate()`` turns what a
person may type into what the model can do, or an ``InputError`` with a sentence: empty or over-long
text, characters the model cannot write, a template the embedded model does not know, steps out of range.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

from backends.common.errors import InputError
from backends.common.seeding import check_seed

from .models import DEFAULT_BLOCK_LIST, DEFAULT_MODEL, MODEL_CHOICES, PRESETS, Preset
from .networks import ALPHABET, MAX_LETTERS, MIN_LETTERS, PROMPT_WORDS

DEFAULT_TEMPLATE = "a sign that says"
MAX_TEMPLATE_CHARS = 80
MAX_STEPS = 100
MAX_EXTRA_PAIRS = 16
MAX_BLOCKED = 200
TARGETS = ("localized", "all", "random")
MAX_TRAIN_STEPS = 2000
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

    model: str = DEFAULT_MODEL
    template: str = DEFAULT_TEMPLATE
    seed: int = 0
    num_inference_steps: int | None = None  # None: the model's preset
    guidance_scale: float | None = None

    def validate(self) -> None:
        rules_for(self.model)
        self.template = check_template(self.template, self.model)
        check_seed(self.seed)
        if self.num_inference_steps is not None and not 1 <= int(self.num_inference_steps) <= MAX_STEPS:
            raise InputError(f"Steps must be between 1 and {MAX_STEPS}, got {self.num_inference_steps}.")
        if self.guidance_scale is not None and not 1.0 <= float(self.guidance_scale) <= 30.0:
            raise InputError(f"Guidance scale must be between 1 and 30, got {self.guidance_scale}.")

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
    text: str

    def validate(self) -> None:
        super().validate()
        self.text = check_text(self.text, self.model)

    @property
    def prompt(self) -> str:
        return prompt_for(self.template, self.text)


@dataclass(kw_only=True)
class AdapterRequest(GenerateRequest):
    """Generate with a LoRA adapter file (``adapter.safetensors`` of a fine-tune) applied."""

    adapter: Path | None = None

    def validate(self) -> None:
        super().validate()
        if self.adapter is None or not str(self.adapter):
            raise InputError("Upload an adapter (.safetensors) or fine-tune first.")
        self.adapter = Path(self.adapter)
        if not self.adapter.is_file():
            raise InputError(f"The adapter file {self.adapter.name} does not exist.")


@dataclass(kw_only=True)
class LocalizeRequest(Sampling):
    text: str  # A: the text of the unpatched image
    new_text: str  # B: the text whose K/V are patched in
    extra_pairs: int = 0  # more (A, B) pairs of held-out words, for a steadier average
    start_step: int = 0
    per_head: bool = True
    top_k: int | None = None  # None: choose by the rule of ``localize.choose``

    def validate(self) -> None:
        super().validate()
        self.text = check_text(self.text, self.model, "The original text")
        self.new_text = check_text(self.new_text, self.model, "The new text")
        if self.text.lower() == self.new_text.lower():
            raise InputError("The original and the new text are the same; the scan needs two different texts.")
        if not 0 <= int(self.extra_pairs) <= MAX_EXTRA_PAIRS:
            raise InputError(f"Extra pairs must be between 0 and {MAX_EXTRA_PAIRS}.")
        self.start_step = self.check_start(self.start_step, 0)
        if self.top_k is not None and int(self.top_k) < 1:
            raise InputError("Top-k must be at least 1 (or empty to choose by the rule).")

    def pairs(self) -> list[tuple[str, str]]:
        """(A, B) texts: the asked pair, then held-out words paired at random (seeded)."""
        from .data import HELD_OUT_WORDS

        rng = np.random.default_rng(self.seed)
        words = [w for w in HELD_OUT_WORDS if w not in (self.text.lower(), self.new_text.lower())]
        picks = rng.choice(len(words), size=(int(self.extra_pairs), 2), replace=True)
        extra = [(words[i], words[j if j != i else (j + 1) % len(words)]) for i, j in picks]
        return [(self.text, self.new_text), *extra]


@dataclass(kw_only=True)
class EditRequest(Sampling):
    text: str  # the text of the original image (prompt A)
    new_text: str  # the text to write instead (prompt B)
    layers: list[str] | None = None  # None: the model's localized layers
    start_step: int | None = None  # None: the model's edit start step
    region: tuple[int, int, int, int] | None = None  # x0, y0, x1, y1: outside it the original is kept

    def validate(self) -> None:
        super().validate()
        self.text = check_text(self.text, self.model, "The original text")
        self.new_text = check_text(self.new_text, self.model, "The new text")
        self.start_step = self.check_start(self.start_step, self.preset.edit_start_step)
        if self.layers is not None:
            self.layers = [str(x).strip() for x in self.layers if str(x).strip()]
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
    text: str
    block_list: list[str] = field(default_factory=lambda: list(DEFAULT_BLOCK_LIST))
    benign_text: str | None = None  # None: a benign word drawn with the seed
    layers: list[str] | None = None  # None: the model's toxic-text layers
    start_step: int | None = None

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
        if self.layers is not None:
            self.layers = [str(x).strip() for x in self.layers if str(x).strip()]

    def benign(self) -> str:
        if self.benign_text:
            return self.benign_text
        pool = [w for w in benign_words() if not blocked_words(w, self.block_list)]
        return pool[np.random.default_rng(self.seed).integers(len(pool))]


@dataclass(kw_only=True)
class FinetuneRequest(Sampling):
    target: str = "localized"
    layers: list[str] | None = None  # the localized layers (None: the model's); "random" draws as many
    train_steps: int = 60
    rank: int = 4
    learning_rate: float = 1e-4
    batch_size: int = 8
    eval_words: int = 12  # held-out words generated and read before and after

    def validate(self) -> None:
        super().validate()
        if self.model != DEFAULT_MODEL:
            raise InputError("Fine-tuning runs on the embedded model here; the published models need a GPU and "
                             "the paper's LAION-OCR data.")
        if self.target not in TARGETS:
            raise InputError(f"The LoRA target must be one of {', '.join(TARGETS)}; got {self.target!r}.")
        if not 1 <= int(self.train_steps) <= MAX_TRAIN_STEPS:
            raise InputError(f"Training steps must be between 1 and {MAX_TRAIN_STEPS}.")
        if not 1 <= int(self.rank) <= 64:
            raise InputError("The LoRA rank must be between 1 and 64.")
        if not 0 < float(self.learning_rate) <= 1e-2:
            raise InputError("The learning rate must be in (0, 0.01].")
        if not 1 <= int(self.batch_size) <= 64:
            raise InputError("The batch size must be between 1 and 64.")
        if not 1 <= int(self.eval_words) <= 66:
            raise InputError("Evaluate on 1 to 66 held-out words.")
        if self.layers is not None:
            self.layers = [str(x).strip() for x in self.layers if str(x).strip()]
        if self.target != "all" and not (self.layers or self.preset.edit_layers):
            raise InputError("This model's text layers are not known yet: run Localize first, or name the layers.")
