"""A saved compressed model loads back, with its shared bases still shared, and gives the same logits."""

import copy

import torch

from backends.compress.calibrate import gram_matrices
from backends.compress.plan import apply_plan, count_params, make_plan
from backends.compress.store import PLAN, WEIGHTS, load_compressed, save_compressed

from .tiny_lm import model as tiny_model
from .tiny_lm import tokenizer


def test_saved_model_loads_back_with_the_same_logits_and_generates(tmp_path):
    m = tiny_model(layers=3)  # 3 layers, groups of 2: a leftover layer keeps the group's rank
    pieces = [torch.randint(0, 256, (40,)) for _ in range(3)]
    c = copy.deepcopy(m)
    plan = make_plan(c, "basis_sharing", 0.3, ("q", "k", "v", "up", "gate"), 2)
    apply_plan(c, plan, gram_matrices(m, pieces))
    tok = tokenizer()
    save_compressed(c, tok, plan, tmp_path)
    assert (tmp_path / WEIGHTS).is_file() and (tmp_path / PLAN).is_file()
    tok2, back, plan2, _ = load_compressed(tmp_path)
    assert plan2 == plan and count_params(back) == count_params(c)
    layers = back.model.layers
    assert layers[0].mlp.up_proj.basis is layers[1].mlp.up_proj.basis
    assert layers[2].mlp.up_proj.basis is not layers[1].mlp.up_proj.basis
    x = tok("def f(x): return x", return_tensors="pt").input_ids
    assert torch.equal(back(x).logits, c(x).logits)
    out = back.generate(x, max_new_tokens=4, do_sample=False, pad_token_id=256)
    assert torch.equal(out, c.generate(x, max_new_tokens=4, do_sample=False, pad_token_id=256))
