"""The LLM Compression capability's typed requests (torch-free: the tab and the action catalog import them)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from backends.common.errors import InputError
from backends.common.params import param

DEFAULT_MODEL = "smollm2-135m-instruct"
# which matrix types share a basis: the authors' GQA choice (Mistral-7B: q, up, gate), their LLaMA choice,
# the MLP only, everything, or nothing (then Basis Sharing is SVD-LLM)
SHARE_PRESETS = ("q,up,gate", "q,k,v,up,gate", "up,gate", "q,k,v,o,up,gate,down", "none")
TEXTS = ("stdlib-docstrings", "devils-dictionary", "python-reference", "wikitext2", "c4")


HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")


def served_model_name(name: str) -> str:
    """The model a page or API caller may name: a registry id or a Hub id (``org/name``, in the models folder
    ``models download`` fills or the Hugging Face cache) — never a path of the server (the CLI takes folders)."""
    from backends.common.registry import default_registry

    name = (name or "").strip() or DEFAULT_MODEL
    if name in default_registry():
        return name
    if HUB_ID.fullmatch(name) and ".." not in name and not Path(name).exists():
        return name
    raise InputError(f"{name[:80]!r}: give a model id the suite knows (e.g. {DEFAULT_MODEL}) or a Hub id "
                     "(org/name) that `iclr25-studio models download` fetched or the Hugging Face cache holds; "
                     "a folder of the server is not accepted here (the command line takes folders).")


@dataclass
class CompressRequest:
    model: str = param(DEFAULT_MODEL, label="Model",
                       help="A causal LM: a registry id (the suite ships SmolLM2-135M-Instruct) or a cached Hub id "
                            "(org/name) of a Llama-family model; the command line also takes a model folder.")
    ratio: int = param(20, minimum=10, maximum=60, step=5, label="Compression ratio (%)", cli=("--ratio",),
                       help="The share of the compressed matrices' parameters removed (the paper's ratio; embeddings "
                            "and the LM head stay).")
    shared: str = param("q,up,gate", choices=SHARE_PRESETS, label="Matrix types that share a basis",
                        help="Types stacked across layers into one shared basis; the rest get a per-layer whitened SVD. "
                             "q,up,gate is the authors' choice for GQA models; q,k,v,up,gate their LLaMA choice.")
    group_size: int = param(2, minimum=2, maximum=8, label="Layers per shared basis",
                            help="Consecutive layers grouped into one basis (the paper's default: 2).")
    refit: bool = param(False, label="Refit coefficients",
                        help="After the SVDs, refit each shared layer's coefficients on the compressed model's own "
                             "inputs (the `update` step of the authors' configs, which their scripts never call).")
    baselines: bool = param(True, label="Also run SVD-LLM and SVD",
                            help="Compress with per-layer whitened SVD (SVD-LLM) and plain SVD at the same ratio, for "
                                 "the table.")
    calibration_text: str = param("stdlib-docstrings", choices=TEXTS, label="Calibration text",
                                  help="Whose activations whiten the SVDs (never the evaluation text).")
    eval_text: str = param("devils-dictionary", choices=TEXTS, label="Evaluation text",
                           help="Held-out text the perplexity is measured on: The Devil's Dictionary (Bierce, public "
                                "domain, shipped), the Python Language Reference, or WikiText-2 / C4 when cached.")
    calibration_blocks: int = param(8, minimum=1, maximum=256, label="Calibration blocks",
                                    help="How many consecutive blocks of the calibration text to run (paper: 256 × 2048).")
    block_tokens: int = param(256, minimum=16, maximum=2048, step=16, label="Tokens per block",
                              help="Length of each calibration block and each perplexity window.")
    eval_windows: int = param(2, minimum=1, maximum=64, label="Perplexity windows",
                              help="How many consecutive windows of the evaluation text are scored.")

    heal_steps: int = param(0, minimum=0, maximum=500, label="LoRA heal steps (0: no heal)",
                            help="After compressing, fine-tune LoRA adapters on every compressed layer's coefficients "
                                 "for this many steps (one calibration block each; never the evaluation text) and "
                                 "merge them in. Every method gets the same budget.")
    heal_rank: int = param(8, minimum=1, maximum=64, label="LoRA rank",
                           help="Rank r of each LoRA adapter (alpha = 2r).")
    heal_lr: float = param(5e-4, minimum=1e-6, maximum=1e-2, step=1e-5, label="LoRA learning rate",
                           help="AdamW learning rate of the heal (constant, no weight decay).")

    def validate(self) -> None:
        if not self.model.strip():
            raise InputError("Name a model to compress.")
        if self.calibration_text == self.eval_text:
            raise InputError("Calibrate on another text than the one perplexity is measured on.")

    def heal_budget(self):
        """The LoRA heal's budget (the same for every method), or None when the heal is off."""
        if self.heal_steps <= 0:
            return None
        from .heal import HealBudget

        return HealBudget(self.heal_steps, self.heal_rank, float(self.heal_lr))

    def shared_types(self) -> tuple[str, ...]:
        return () if self.shared == "none" else tuple(self.shared.split(","))


@dataclass
class ChatRequest:
    """The same prompt through the original and the compressed model, streamed side by side."""

    prompt: str = param("Explain in two sentences what a Python list is.", label="Prompt",
                        help="What both models answer (greedy decoding, the chat template when the model has one).")
    max_new_tokens: int = param(40, minimum=1, maximum=256, label="New tokens",
                                help="How many tokens each model writes.")
