"""LoRA "heal": a short fine-tune of a compressed model on the calibration text, merged back in.

Why on the per-layer coefficients: every compressed matrix (Basis Sharing, SVD-LLM and SVD alike) is a
``FactorizedLinear`` = coef ∘ basis. LoRA (``peft``) on each ``coef`` (k → d_out) learns ΔC = B·A of rank r;
merging it changes the coefficients only, so the healed model has the same structure, the same parameter
count and the same file format as before (a shared basis stays shared and frozen). Every method gets the
same budget: the same steps, the same blocks of the calibration text (never the evaluation text), rank, lr.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from backends.common.progress import ProgressFn, raise_if_cancelled

TARGET = r".*\.coef$"  # peft's regex over module names: every FactorizedLinear's coefficient layer


@dataclass(frozen=True)
class HealBudget:
    steps: int  # optimiser steps, one calibration block each
    rank: int  # LoRA rank r (alpha = 2r)
    lr: float  # AdamW learning rate, constant
    seed: int = 0  # LoRA's A matrices start random (B at zero); the same draw for every method

    def to_dict(self) -> dict:
        return {"steps": self.steps, "rank": self.rank, "lr": self.lr, "alpha": 2 * self.rank, "seed": self.seed,
                "target": "coef"}


def heal_blocks(ids: torch.Tensor, block: int, steps: int) -> list[torch.Tensor]:
    """The training blocks: consecutive ``block``-token pieces of the calibration text, reused cyclically
    when the text is shorter than ``steps`` blocks."""
    count = max(ids.numel() // block, 1)
    pieces = [ids[i * block:(i + 1) * block] for i in range(count)]
    return [pieces[s % count] for s in range(steps)]


def _stop_inside_a_step(model, cancel) -> list:
    """A heal step of a real LLM takes seconds: Stop is checked before every decoder layer's forward and
    backward too, so it ends a step within one layer's work instead of after the whole step."""
    if cancel is None:
        return []
    from .layout import decoder_layers

    def check(*_):
        raise_if_cancelled(cancel)

    hooks = []
    for layer in decoder_layers(model):
        hooks.append(layer.register_forward_pre_hook(check))
        hooks.append(layer.register_full_backward_pre_hook(check))
    return hooks


def heal(model, pieces: list[torch.Tensor], budget: HealBudget, cancel=None,
         report: ProgressFn | None = None) -> dict:
    """Fine-tune LoRA adapters on ``model``'s coefficient layers over ``pieces`` (one per step), merge them
    into the coefficients in place, and return {losses, seconds, trainable}."""
    from peft import LoraConfig, get_peft_model

    t0 = time.perf_counter()
    config = LoraConfig(r=budget.rank, lora_alpha=2 * budget.rank, lora_dropout=0.0, target_modules=TARGET,
                        bias="none")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(budget.seed)
        peft_model = get_peft_model(model, config)
    trainable = [p for p in peft_model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=budget.lr, weight_decay=0.0)
    peft_model.train()
    losses = []
    hooks = _stop_inside_a_step(model, cancel)
    try:
        for n, ids in enumerate(pieces):
            raise_if_cancelled(cancel)
            x = ids.view(1, -1)
            loss = peft_model(input_ids=x, labels=x, use_cache=False).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(round(loss.item(), 4))
            if report:
                report((n + 1) / len(pieces), f"heal step {n + 1}/{len(pieces)} (loss {losses[-1]:.3f})")
    finally:
        for hook in hooks:
            hook.remove()
        peft_model.eval()
    merged = peft_model.merge_and_unload()
    for p in merged.parameters():
        p.requires_grad_(False)
    return {"losses": losses, "seconds": time.perf_counter() - t0,
            "trainable": sum(p.numel() for p in trainable), "model": merged.eval()}
