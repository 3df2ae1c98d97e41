"""The same prompt through two models at once, token by token (greedy), for the side-by-side view."""

from __future__ import annotations

from collections.abc import Iterator

import torch

from backends.common.progress import raise_if_cancelled


def prompt_ids(tok, prompt: str) -> torch.Tensor:
    """The prompt as the model expects it: through its chat template when it has one."""
    if getattr(tok, "chat_template", None):
        ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                      return_tensors="pt")
        ids = ids if torch.is_tensor(ids) else ids["input_ids"]
        return ids.view(1, -1)
    return tok(prompt, return_tensors="pt").input_ids


@torch.no_grad()
def side_by_side(models: list, tok, prompt: str, max_new_tokens: int, cancel=None) -> Iterator[list[str]]:
    """Yield each model's answer so far after every new token (each model keeps its own KV cache)."""
    ids = prompt_ids(tok, prompt)
    eos = tok.eos_token_id
    state = [{"past": None, "next": ids, "out": [], "done": False} for _ in models]
    for _ in range(max_new_tokens):
        raise_if_cancelled(cancel)
        for model, s in zip(models, state, strict=True):
            if s["done"]:
                continue
            out = model(input_ids=s["next"], past_key_values=s["past"], use_cache=True)
            s["past"] = out.past_key_values
            token = int(out.logits[0, -1].argmax())
            if token == eos:
                s["done"] = True
                continue
            s["out"].append(token)
            s["next"] = torch.tensor([[token]])
        yield [tok.decode(s["out"], skip_special_tokens=True) for s in state]
        if all(s["done"] for s in state):
            break
