"""The decompositions: SVD-LLM whitening, grouped SVD with a shared basis, plain SVD, the rank rule.

Orientation as in the paper: W_l is the transposed ``nn.Linear`` weight (d_in × d_out) and X is
tokens × d_in, so a layer computes X W_l. For a group of n layers of one type:

* whitening S = Lᵀ with Σ_l X_lᵀX_l = L Lᵀ (Cholesky; on failure the matrix is shifted by
  (−λ_min + 7e-6)·I as SVD-LLM does), so ‖X W‖_F = ‖S W‖_F;
* SVD of S·[W_1 … W_n] = U Σ Vᵀ in float64; basis B = S⁻¹ U_k Σ_k (d_in × k), shared by the group,
  and coefficients C_l = the l-th d_out-column slice of V_kᵀ; then X W_l ≈ (X B) C_l;
* plain SVD: the same with S = I (no calibration);
* the rank of a group: k = ⌊(1 − ratio) · d_in · d_out · n / (d_in + n · d_out)⌋, so the group keeps
  (1 − ratio) of its parameters (the authors' ``compute_num_basis``).
"""

from __future__ import annotations

import math

import torch

from backends.common.errors import InputError

JITTER = 7e-6


def rank_for(ratio: float, d_in: int, d_out: int, n: int) -> int:
    """The rank that removes ``ratio`` (0–1) of n stacked d_in × d_out matrices' parameters."""
    return int(math.floor((1.0 - ratio) * d_in * d_out * n / (d_in + n * d_out)))


def largest_ratio(d_in: int, d_out: int, n: int) -> float:
    """The largest ratio (0–1) that still leaves rank 1."""
    return 1.0 - (d_in + n * d_out) / (d_in * d_out * n)


def check_rank(rank: int, ratio: float, what: str, d_in: int, d_out: int, n: int) -> None:
    if rank < 1:
        raise InputError(f"A {ratio * 100:.0f} % compression leaves no rank for {what} ({d_in} → {d_out}, "
                         f"{n} layer(s) per basis): at most {math.floor(largest_ratio(d_in, d_out, n) * 100)} % "
                         "keeps one basis vector.")


def whitening(gram: torch.Tensor) -> torch.Tensor:
    """The upper-triangular S with SᵀS = gram (float64), shifted to positive definite when needed."""
    g = gram.double()
    g = (g + g.T) / 2
    chol, info = torch.linalg.cholesky_ex(g)
    if int(info) != 0:
        lam_min = torch.linalg.eigvalsh(g)[0].item()
        g = g + (-lam_min + JITTER) * torch.eye(g.shape[0], dtype=g.dtype)
        chol, info = torch.linalg.cholesky_ex(g)
        if int(info) != 0:  # a degenerate matrix: fall back to a scaled identity shift
            g = g + JITTER * max(1.0, g.diagonal().abs().max().item()) * torch.eye(g.shape[0], dtype=g.dtype)
            chol = torch.linalg.cholesky(g)
    return chol.T


def top_singular(a: torch.Tensor, k: int):
    """(U_k Σ_k, V_kᵀ) of ``a`` (float64) from the eigen-decomposition of its smaller Gram matrix.

    Same factors as ``torch.linalg.svd`` up to float64 rounding (and the signs of the vectors), several times
    faster on the wide stacked matrices (576 × 3072 for two SmolLM2 MLP layers)."""
    if a.shape[0] <= a.shape[1]:
        lam, u = torch.linalg.eigh(a @ a.T)
        lam, u = lam.flip(0)[:k].clamp_min(0), u.flip(1)[:, :k]
        sigma = lam.sqrt()
        keep = sigma > sigma.max().clamp_min(1e-300) * 1e-12
        vh = torch.zeros(k, a.shape[1], dtype=a.dtype)
        vh[keep] = (u[:, keep].T @ a) / sigma[keep, None]
        return u * sigma, vh
    lam, v = torch.linalg.eigh(a.T @ a)
    v = v.flip(1)[:, :k]
    return a @ v, v.T


def shared_factors(weights: list[torch.Tensor], rank: int, gram: torch.Tensor | None, whiten=None):
    """(B d_in × k, [C_l k × d_out]) for ``nn.Linear`` weights (d_out × d_in) of one group.

    ``gram`` None is plain truncated SVD; otherwise the whitened SVD on the group's summed Gram matrix
    (``whiten``: its whitening matrix when already computed)."""
    w = torch.cat([wt.detach().double().T for wt in weights], dim=1)  # d_in × n·d_out
    k = min(rank, min(w.shape))
    if gram is None and whiten is None:
        basis, coef = top_singular(w, k)
    else:
        s_mat = whiten if whiten is not None else whitening(gram)
        us, coef = top_singular(s_mat @ w, k)
        basis = torch.linalg.solve_triangular(s_mat, us, upper=True)
    d_out = weights[0].shape[0]
    return basis.float(), [coef[:, i * d_out:(i + 1) * d_out].float() for i in range(len(weights))]


def refit_coefficients(basis: torch.Tensor, weight: torch.Tensor, gram: torch.Tensor) -> torch.Tensor:
    """C = (BᵀGB)⁻¹BᵀGW: the coefficients that best map the compressed model's inputs (Gram G) through
    the fixed basis B to the original outputs X W (the refit the authors' configs name ``update``)."""
    b = basis.double()
    g = gram.double()
    lhs = b.T @ g @ b
    lhs = lhs + JITTER * lhs.diagonal().mean().clamp_min(1e-12) * torch.eye(lhs.shape[0], dtype=lhs.dtype)
    rhs = b.T @ g @ weight.detach().double().T
    return torch.linalg.solve(lhs, rhs).float()
