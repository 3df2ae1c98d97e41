"""The LoRA heal: it lowers the loss on its blocks, changes only the per-layer coefficients (a shared basis stays
shared and untouched), keeps the size, and the healed model saves and loads back with the same logits."""

import copy

import pytest
import torch

from backends.common.errors import InputError
from backends.compress.calibrate import gram_matrices
from backends.compress.heal import HealBudget, heal, heal_blocks
from backends.compress.plan import apply_plan, count_params, make_plan
from backends.compress.requests import CompressRequest, served_model_name
from backends.compress.store import load_compressed, save_compressed
from backends.compress.texts import load_text

from .tiny_lm import model as tiny_model
from .tiny_lm import tokenizer


def nll(model, ids):
    with torch.no_grad():
        return model(input_ids=ids.view(1, -1), labels=ids.view(1, -1)).loss.item()


def test_heal_learns_changes_only_coefficients_and_the_healed_model_loads_back(tmp_path):
    m = tiny_model(layers=4)
    torch.manual_seed(3)
    pieces = [torch.randint(0, 256, (48,)) for _ in range(2)]
    c = copy.deepcopy(m)
    plan = make_plan(c, "basis_sharing", 0.4, ("q", "up", "gate"), 2)
    apply_plan(c, plan, gram_matrices(m, pieces))
    basis = c.model.layers[0].mlp.up_proj.basis.weight.clone()
    coef = c.model.layers[0].mlp.up_proj.coef.weight.clone()
    params, before = count_params(c), nll(c, pieces[0])
    out = heal(c, heal_blocks(pieces[0], 48, 8), HealBudget(steps=8, rank=4, lr=1e-2))
    healed = out["model"]
    assert nll(healed, pieces[0]) < before - 0.05  # it learnt its block
    layers = healed.model.layers
    assert layers[0].mlp.up_proj.basis is layers[1].mlp.up_proj.basis  # still shared, merged: no LoRA left
    assert torch.equal(layers[0].mlp.up_proj.basis.weight, basis)
    assert not torch.equal(layers[0].mlp.up_proj.coef.weight, coef)
    assert count_params(healed) == params and not any("lora" in n for n, _ in healed.named_parameters())
    assert out["trainable"] > 0 and len(out["losses"]) == 8
    save_compressed(healed, tokenizer(), plan, tmp_path)
    _, back, _, _ = load_compressed(tmp_path)
    x = pieces[1].view(1, -1)
    assert torch.equal(back(x).logits, healed(x).logits)


def test_the_same_budget_gives_the_same_heal_and_blocks_cycle_over_a_short_text():
    ids = torch.arange(100)
    assert [b[0].item() for b in heal_blocks(ids, 40, 5)] == [0, 40, 0, 40, 0]  # 2 whole blocks, reused
    m = tiny_model(layers=2)
    pieces = heal_blocks(torch.randint(0, 256, (64,), generator=torch.Generator().manual_seed(0)), 32, 3)
    runs = []
    for _ in range(2):
        c = copy.deepcopy(m)
        apply_plan(c, make_plan(c, "svd", 0.3, (), 1), None)
        runs.append(heal(c, pieces, HealBudget(3, 2, 1e-3))["losses"])
    assert runs[0] == runs[1]  # LoRA's random start is seeded: every method starts from the same draw
    assert CompressRequest().heal_budget() is None and CompressRequest(heal_steps=5).heal_budget().steps == 5


def test_the_evaluation_text_is_the_public_domain_book_and_a_server_path_is_no_model_name(tmp_path):
    book = load_text("devils-dictionary")
    assert book.startswith("PREFACE") and "ZOOLOGY, n." in book and len(book) > 300_000
    assert CompressRequest().eval_text == "devils-dictionary" != CompressRequest().calibration_text
    assert served_model_name("smollm2-135m-instruct") == "smollm2-135m-instruct"
    assert served_model_name("HuggingFaceTB/SmolLM2-360M-Instruct") == "HuggingFaceTB/SmolLM2-360M-Instruct"
    for path in (str(tmp_path), "/etc", "~/x", "a/../b", "tests", "a/b/c"):
        with pytest.raises(InputError, match="not accepted here"):
            served_model_name(path)


def test_a_stop_during_a_heal_step_ends_it_at_the_next_layer():
    from backends.common.errors import Cancelled
    from backends.common.progress import CancelToken

    m = tiny_model(layers=4)
    apply_plan(m, make_plan(m, "svd", 0.3, (), 1), None)
    token, ran = CancelToken(), []
    layers = m.model.layers
    layers[0].register_forward_hook(lambda *_: token.cancel())  # Stop pressed while the first layer runs
    layers[1].register_forward_hook(lambda *_: ran.append(1))
    with pytest.raises(Cancelled):
        heal(m, [torch.randint(0, 256, (32,))], HealBudget(1, 2, 1e-3), cancel=token)
    assert ran == []  # the step stopped before the second layer, not after the whole step
