"""The compressed linear layer: x ↦ coef(basis(x)), where one ``basis`` object may serve several layers.

Why a plain module pair and not a new model class: the compressed model stays an ordinary
``transformers`` model (``generate()``, ``save_pretrained`` of the config, PEFT) with some ``nn.Linear``
replaced; sharing is object identity, so ``model.parameters()`` counts a shared basis once.
"""

from __future__ import annotations

import torch
from torch import nn


class FactorizedLinear(nn.Module):
    """A low-rank linear layer: ``basis`` (d_in → k, no bias, possibly shared) then ``coef`` (k → d_out)."""

    def __init__(self, basis: nn.Linear, coef: nn.Linear):
        super().__init__()
        self.basis = basis
        self.coef = coef
        self.in_features = basis.in_features
        self.out_features = coef.out_features

    @property
    def weight(self) -> torch.Tensor:
        """The dense equivalent (d_out × d_in), for inspection (C_lᵀ Bᵀ)."""
        return self.coef.weight @ self.basis.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.coef(self.basis(x))


def make_basis(b: torch.Tensor, dtype=None) -> nn.Linear:
    """An ``nn.Linear`` (d_in → k) holding basis B (d_in × k)."""
    lin = nn.Linear(b.shape[0], b.shape[1], bias=False)
    lin.weight.data = b.T.contiguous().to(dtype or b.dtype)
    return lin


def make_coef(c: torch.Tensor, bias: torch.Tensor | None, dtype=None) -> nn.Linear:
    """An ``nn.Linear`` (k → d_out) holding coefficients C (k × d_out) and the original bias."""
    lin = nn.Linear(c.shape[0], c.shape[1], bias=bias is not None)
    lin.weight.data = c.T.contiguous().to(dtype or c.dtype)
    if bias is not None:
        lin.bias.data = bias.detach().clone().to(dtype or c.dtype)
    return lin
