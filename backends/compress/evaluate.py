"""Measuring a (compressed) model: perplexity on fixed windows, generation speed, size on disk."""

from __future__ import annotations

import math
import time

import torch

from backends.common.progress import ProgressFn, raise_if_cancelled


@torch.no_grad()
def perplexity(model, windows: list[torch.Tensor], cancel=None, report: ProgressFn | None = None) -> float:
    """exp(mean next-token NLL) over non-overlapping windows (each scores its length − 1 tokens)."""
    nll, count = 0.0, 0
    for n, w in enumerate(windows):
        raise_if_cancelled(cancel)
        ids = w.view(1, -1)
        logits = model(ids, use_cache=False).logits[0, :-1].float()
        nll += torch.nn.functional.cross_entropy(logits, ids[0, 1:], reduction="sum").item()
        count += ids.shape[1] - 1
        if report:
            report((n + 1) / len(windows), f"perplexity window {n + 1}/{len(windows)}")
    return math.exp(nll / max(count, 1))


@torch.no_grad()
def tokens_per_second(model, tokenizer, prompt: str = "The history of computing", new_tokens: int = 8) -> float:
    """Greedy generation speed (new tokens / s, after one warm-up token)."""
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    pad = tokenizer.eos_token_id
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=1, do_sample=False, pad_token_id=pad)
    t0 = time.perf_counter()
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens, do_sample=False,
                         min_new_tokens=new_tokens, pad_token_id=pad)
    made = out.shape[1] - ids.shape[1]
    return made / max(time.perf_counter() - t0, 1e-9)
