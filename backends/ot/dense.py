"""The solver's n × m work in row blocks, so that its memory is the cost plus one plan.

MDOT-TNT needs, at a given γ, log-sum-exps of v_j − γC_ij over rows and columns, the plan
P = exp(u_i + v_j − γC_ij) (for the Newton system's products) and ⟨P, C⟩. Kept as whole n × m temporaries
these took five dense copies (8n² bytes each in float64): 10.7 GiB at n = 128², more than half of what a shared
24 GiB machine has free. Here only the
cost and one plan are n × m; everything else is made a block of rows at a time (``BLOCK_ENTRIES`` entries).
The cost may be stored in float32 (half the bytes; the arithmetic stays in the compute dtype, float64 by
default): a cost in [0, 1] rounded to float32 moves each entry by under 6e-8, far below any gap measured here.

With one block (n · m ≤ ``BLOCK_ENTRIES``, e.g. n ≤ 2,048 square) every result is bit for bit what the whole
n × m expressions gave (same operations in the same order).
"""

from __future__ import annotations

import torch

BLOCK_ENTRIES = 1 << 22  # ~32 MiB of float64 per block temporary


class BlockedCost:
    """A dense cost C (n, m) kept once, and the γ-scaled operations the solver needs on it."""

    def __init__(self, C: torch.Tensor, dtype: torch.dtype):
        self.C, self.dtype = C, dtype
        self.n, self.m = int(C.shape[0]), int(C.shape[1])
        self.rows = max(1, BLOCK_ENTRIES // max(1, self.m))
        self.gamma = 1.0

    def blocks(self):
        for s in range(0, self.n, self.rows):
            yield slice(s, min(self.n, s + self.rows))

    def _gc(self, s: slice) -> torch.Tensor:
        """γ C[s] in the compute dtype: a new block."""
        return self.C[s].to(self.dtype) * self.gamma

    def lse_rows(self, v: torch.Tensor) -> torch.Tensor:
        """log Σ_j exp(v_j − γC_ij), one per row."""
        out = torch.empty(self.n, dtype=self.dtype, device=self.C.device)
        for s in self.blocks():
            t = self._gc(s).neg_().add_(v[None, :])  # = v − γC exactly (negation is exact)
            out[s] = torch.logsumexp(t, dim=1)
        return out

    def lse_cols(self, u: torch.Tensor) -> torch.Tensor:
        """log Σ_i exp(u_i − γC_ij), one per column (blocks combined by a log-sum-exp of their sums)."""
        parts = []
        for s in self.blocks():
            t = self._gc(s).neg_().add_(u[s, None])
            parts.append(torch.logsumexp(t, dim=0))
        return parts[0] if len(parts) == 1 else torch.logsumexp(torch.stack(parts), dim=0)

    def plan(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """P = exp(u_i + v_j − γC_ij): the one new n × m array."""
        P = u[:, None] + v[None, :]
        for s in self.blocks():
            P[s].sub_(self._gc(s))
        return P.exp_()

    def dot(self, P: torch.Tensor) -> float:
        """⟨P, C⟩ (C unscaled) without an n × m temporary."""
        total = 0.0
        for s in self.blocks():
            total += float(torch.dot(P[s].reshape(-1), self.C[s].to(P.dtype).reshape(-1)))
        return total

    def row_sums_of_square(self, P: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """Σ_j P_ij² / c_j, one per row (the Newton system's diagonal)."""
        out = torch.empty(self.n, dtype=P.dtype, device=P.device)
        for s in self.blocks():
            out[s] = (P[s] * P[s] / c[None, :]).sum(1)
        return out
