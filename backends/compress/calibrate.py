"""Calibration: the Gram matrices XᵀX of every compressed weight's input, from a calibration text.

As the authors' code does, hooks on the uncompressed model accumulate XᵀX per layer and input (one
forward pass over the calibration blocks); shared types later sum these over a group. Accumulated in
float64 (theirs: float32) because the sums over thousands of tokens lose digits in float32.
"""

from __future__ import annotations

import torch

from backends.common.progress import ProgressFn, raise_if_cancelled

from .layout import GRAM_SOURCE, decoder_layers, get_linear


def blocks(ids: torch.Tensor, block: int, count: int) -> list[torch.Tensor]:
    """``count`` consecutive ``block``-token pieces from the start of a token sequence."""
    return [ids[i * block:(i + 1) * block] for i in range(count) if (i + 1) * block <= ids.numel()]


@torch.no_grad()
def gram_matrices(model, pieces: list[torch.Tensor], cancel=None, report: ProgressFn | None = None,
                  modules=None) -> dict[tuple[int, str], torch.Tensor]:
    """{(layer, input name): XᵀX} over every token of ``pieces`` (float64).

    ``modules`` ({(layer, name): module}) hooks other modules than the default Llama ones (the refit
    hooks the compressed model's bases)."""
    if modules is None:
        layers = decoder_layers(model)
        modules = {(i, g): get_linear(layer, t) for i, layer in enumerate(layers) for g, t in GRAM_SOURCE.items()}
    grams: dict[tuple[int, str], torch.Tensor] = {}
    handles = []

    def hook(key):
        def pre(_module, args):
            x = args[0].detach().reshape(-1, args[0].shape[-1]).double()
            grams[key] = grams[key] + x.T @ x if key in grams else x.T @ x
        return pre

    for key, module in modules.items():
        handles.append(module.register_forward_pre_hook(hook(key)))
    try:
        for n, piece in enumerate(pieces):
            raise_if_cancelled(cancel)
            model(piece.view(1, -1), use_cache=False)
            if report:
                report((n + 1) / len(pieces), f"calibration block {n + 1}/{len(pieces)}")
    finally:
        for h in handles:
            h.remove()
    return grams
