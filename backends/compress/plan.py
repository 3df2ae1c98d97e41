"""A compression plan (which weights form which group, with which rank) and applying it to a model.

Three methods on one code path, so they differ only where the papers differ:

* ``basis_sharing``: the ``shared`` types are grouped ``group_size`` consecutive layers at a time and
  share one whitened basis (a leftover layer at the end forms its own group but keeps the group-size
  rank, as the authors' ``create_model`` does); the other types get a per-layer whitened SVD;
* ``svd_llm``: every type per layer, whitened (SVD-LLM's truncation-aware whitening, without its
  parameter-update step — the authors' ``svd/`` configs);
* ``svd``: every type per layer, plain truncated SVD (no calibration).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch

from backends.common.errors import InputError
from backends.common.progress import ProgressFn, raise_if_cancelled

from .factorize import check_rank, rank_for, refit_coefficients, shared_factors, whitening
from .layout import GRAM_OF, TYPES, decoder_layers, get_linear, set_linear
from .modules import FactorizedLinear, make_basis, make_coef

METHODS = ("basis_sharing", "svd_llm", "svd")
METHOD_LABELS = {"original": "Original", "svd": "SVD", "svd_llm": "SVD-LLM", "basis_sharing": "Basis Sharing"}


@dataclass
class Group:
    type: str
    layers: list[int]
    rank: int
    whitened: bool


@dataclass
class Plan:
    method: str
    ratio: float  # 0–1: the share of the compressed matrices' parameters removed
    shared: tuple[str, ...]
    group_size: int
    refit: bool = False
    groups: list[Group] = field(default_factory=list)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["shared"] = list(self.shared)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Plan:
        groups = [Group(**g) for g in d.get("groups", [])]
        return cls(d["method"], float(d["ratio"]), tuple(d["shared"]), int(d["group_size"]), bool(d.get("refit")),
                   groups)


def make_plan(model, method: str, ratio: float, shared=(), group_size: int = 2, refit: bool = False) -> Plan:
    """The groups and ranks for ``model``; InputError when a ratio leaves some group no rank."""
    if method not in METHODS:
        raise InputError(f"Unknown method {method!r}; one of {', '.join(METHODS)}.")
    if not 0 < ratio < 1:
        raise InputError(f"The compression ratio must be between 0 and 100 %, not {ratio * 100:g} %.")
    unknown = [t for t in shared if t not in TYPES]
    if unknown:
        raise InputError(f"Unknown matrix type(s) {unknown}; the types are {', '.join(TYPES)}.")
    if group_size < 1:
        raise InputError("The group size must be at least 1.")
    layers = decoder_layers(model)
    shared = tuple(t for t in TYPES if t in shared) if method == "basis_sharing" else ()
    plan = Plan(method, float(ratio), shared, int(group_size) if shared else 1, bool(refit and shared))
    for t in TYPES:
        lin = get_linear(layers[0], t)
        d_in, d_out = lin.in_features, lin.out_features
        n = group_size if t in shared else 1
        rank = rank_for(ratio, d_in, d_out, n)
        check_rank(rank, ratio, f"the {t} projections", d_in, d_out, n)
        for start in range(0, len(layers), n):
            plan.groups.append(Group(t, list(range(start, min(start + n, len(layers)))), rank, method != "svd"))
    return plan


def group_gram(grams, g: Group) -> torch.Tensor:
    return sum(grams[(i, GRAM_OF[g.type])] for i in g.layers)


@torch.no_grad()
def apply_plan(model, plan: Plan, grams=None, cancel=None, report: ProgressFn | None = None) -> dict:
    """Replace the planned weights of ``model`` in place; {(layer, type): original weight} for a refit."""
    layers = decoder_layers(model)
    if any(g.whitened for g in plan.groups) and grams is None:
        raise InputError("Whitened methods need calibration Gram matrices.")
    originals, whitened = {}, {}  # q/k/v (and up/gate) of the same layers share one whitening matrix
    for n, g in enumerate(plan.groups):
        raise_if_cancelled(cancel)
        lins = [get_linear(layers[i], g.type) for i in g.layers]
        dtype = lins[0].weight.dtype
        s_mat = None
        if g.whitened:
            key = (GRAM_OF[g.type], tuple(g.layers))
            if key not in whitened:
                whitened[key] = whitening(group_gram(grams, g))
            s_mat = whitened[key]
        b, cs = shared_factors([lin.weight for lin in lins], g.rank, None, s_mat)
        basis = make_basis(b, dtype)
        for i, lin, c in zip(g.layers, lins, cs, strict=True):
            if plan.refit and g.type in plan.shared:
                originals[(i, g.type)] = lin.weight.detach().clone()
            set_linear(layers[i], g.type, FactorizedLinear(basis, make_coef(c, lin.bias, dtype)))
        if report:
            what = f"layers {g.layers[0]}–{g.layers[-1]}" if len(g.layers) > 1 else f"layer {g.layers[0]}"
            report((n + 1) / len(plan.groups), f"SVD of {g.type} {what} (rank {g.rank})")
    return originals


@torch.no_grad()
def refit(model, plan: Plan, originals: dict, pieces, cancel=None, report: ProgressFn | None = None) -> None:
    """Refit each shared layer's coefficients on the compressed model's own inputs (bases fixed)."""
    from .calibrate import gram_matrices

    layers = decoder_layers(model)
    modules = {(i, t): get_linear(layers[i], t) for (i, t) in originals}
    grams = gram_matrices(model, pieces, cancel, report and (lambda f, m: report(f * 0.9, "refit: " + m)),
                          modules=modules)
    for (i, t), w in originals.items():
        raise_if_cancelled(cancel)
        mod = modules[(i, t)]
        c = refit_coefficients(mod.basis.weight.T, w, grams[(i, t)])
        mod.coef.weight.data = c.T.contiguous().to(mod.coef.weight.dtype)
    if report:
        report(1.0, f"refit {len(originals)} coefficient matrices")


def count_params(model) -> int:
    """Parameters, each shared tensor counted once (``parameters()`` de-duplicates)."""
    return sum(p.numel() for p in model.parameters())


def linear_params(model) -> int:
    """Parameters of the compressible linear layers only (the ratio's denominator)."""
    seen, total = set(), 0
    for layer in decoder_layers(model):
        for t in TYPES:
            for p in get_linear(layer, t).parameters():
                if id(p) not in seen and p.dim() == 2:
                    seen.add(id(p))
                    total += p.numel()
    return total
