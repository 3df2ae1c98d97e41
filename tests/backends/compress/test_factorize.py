"""The decompositions on a tiny random Llama: ranks, whitening, sharing, refit, and the error on no rank."""

import copy

import pytest
import torch

from backends.common.errors import InputError
from backends.compress.calibrate import gram_matrices
from backends.compress.factorize import rank_for, shared_factors, whitening
from backends.compress.plan import apply_plan, count_params, linear_params, make_plan, refit

from .tiny_lm import model as tiny_model


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(1)
    m = tiny_model(layers=4)
    pieces = [torch.randint(0, 256, (48,)) for _ in range(4)]
    return m, pieces, gram_matrices(m, pieces)


def test_rank_rule_is_the_authors():
    # LLaMA-7B q/k/v shared by two layers at 20 % and 50 % (the values the notes recompute)
    assert rank_for(0.2, 4096, 4096, 2) == 2184 and rank_for(0.5, 4096, 4096, 2) == 1365
    assert rank_for(0.2, 4096, 11008, 2) == 2762 and rank_for(0.5, 11008, 4096, 1) == 1492


def test_whitening_is_the_upper_cholesky_factor_and_survives_a_singular_gram():
    x = torch.randn(50, 6, dtype=torch.float64)
    g = x.T @ x
    s = whitening(g)
    assert torch.allclose(s.T @ s, g, atol=1e-8) and torch.allclose(s, s.triu())
    singular = torch.ones(4, 4, dtype=torch.float64)  # rank 1: plain Cholesky fails
    s2 = whitening(singular)
    assert torch.isfinite(s2).all() and torch.allclose(s2.T @ s2, singular, atol=1e-3)


def test_whitened_svd_beats_plain_svd_on_the_calibration_activations():
    torch.manual_seed(0)
    x = torch.randn(200, 16) * torch.linspace(0.05, 3, 16)  # anisotropic inputs
    ws = [torch.randn(8, 16) for _ in range(2)]
    g = (x.T @ x).double()
    for gram in (None, g):
        b, cs = shared_factors(ws, 6, gram)
        err = sum(((x @ b @ c) - x @ w.T).norm() ** 2 for w, c in zip(ws, cs, strict=True))
        if gram is None:
            plain = err
    assert err < plain  # the whitened basis minimises ‖X(W − BC)‖, the plain one ‖W − BC‖


def test_full_rank_shared_factors_reconstruct_every_layer():
    ws = [torch.randn(5, 7, dtype=torch.float64) for _ in range(3)]
    x = torch.randn(40, 7, dtype=torch.float64)
    b, cs = shared_factors(ws, 7, x.T @ x)
    for w, c in zip(ws, cs, strict=True):
        assert torch.allclose((b.double() @ c.double()).T, w, atol=1e-4)


def test_basis_sharing_shares_one_basis_object_and_keeps_the_ratio(setup):
    m, _, grams = setup
    c = copy.deepcopy(m)
    plan = make_plan(c, "basis_sharing", 0.4, ("q", "up", "gate"), 2)
    apply_plan(c, plan, grams)
    layers = c.model.layers
    assert layers[0].self_attn.q_proj.basis is layers[1].self_attn.q_proj.basis
    assert layers[0].self_attn.q_proj.coef is not layers[1].self_attn.q_proj.coef
    assert layers[0].self_attn.k_proj.basis is not layers[1].self_attn.k_proj.basis  # k is private
    kept = linear_params(c) / linear_params(m)
    assert 0.5 < kept <= 0.62 and count_params(c) < count_params(m)
    out = c(torch.randint(0, 256, (1, 12))).logits
    assert torch.isfinite(out).all()


def test_refit_lowers_the_error_of_the_compressed_model(setup):
    m, pieces, grams = setup
    x = torch.randint(0, 256, (1, 48))
    ref = m(x).logits
    errs = {}
    for do_refit in (False, True):
        c = copy.deepcopy(m)
        plan = make_plan(c, "basis_sharing", 0.5, ("q", "k", "v", "up", "gate", "o", "down"), 2, do_refit)
        originals = apply_plan(c, plan, grams)
        if plan.refit:
            assert originals and refit(c, plan, originals, pieces) is None
        errs[do_refit] = (c(x).logits - ref).pow(2).mean().item()
    assert errs[True] < errs[False]


def test_a_ratio_that_leaves_no_rank_is_refused_with_the_largest_that_works(setup):
    m, _, _ = setup
    with pytest.raises(InputError, match=r"leaves no rank for the \w+ projections .* at most \d+ %"):
        make_plan(m, "svd_llm", 0.95, (), 1)


def test_a_model_that_is_not_llama_shaped_is_refused():
    with pytest.raises(InputError, match="Llama-family"):
        make_plan(torch.nn.Linear(3, 3), "svd", 0.2)
