"""Saving and loading a compressed model: one safetensors file, a shared basis stored once.

Why not ``save_pretrained``: safetensors refuses tensors that share memory (the authors fall back to
pickle, ``safe_serialization=False``). Here the file holds every distinct tensor once; ``compress.json``
holds the plan, so loading rebuilds the same module structure (shared objects included) from the
model's config and fills it. Tokenizer and config are saved with their own ``save_pretrained``.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from backends.common.errors import InputError

from .layout import decoder_layers, get_linear, set_linear
from .modules import FactorizedLinear, make_basis, make_coef
from .plan import Plan

WEIGHTS = "model.safetensors"
PLAN = "compress.json"


def save_compressed(model, tokenizer, plan: Plan, folder: str | Path, extra: dict | None = None) -> Path:
    """Write config, tokenizer, ``compress.json`` and the de-duplicated weights to ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors, seen = {}, {}
    for name, t in model.state_dict().items():
        key = (t.data_ptr(), tuple(t.shape))
        if key in seen:
            continue
        seen[key] = name
        tensors[name] = t.detach().contiguous().clone()
    config = model.config
    if getattr(config, "quantization_config", None) is not None:  # a de-quantised GGUF: saved as plain fp32
        config = config.__class__.from_dict({k: v for k, v in config.to_dict().items() if k != "quantization_config"})
    config.save_pretrained(folder)
    if tokenizer is not None:
        tokenizer.save_pretrained(folder)
    save_file(tensors, str(folder / WEIGHTS), metadata={"format": "pt", "compress": "basis-sharing"})
    (folder / PLAN).write_text(json.dumps({"plan": plan.to_dict(), **(extra or {})}, indent=1), encoding="utf-8")
    return folder


def build_structure(model, plan: Plan) -> None:
    """Swap the planned linears of a freshly built ``model`` for empty factorised ones, sharing bases."""
    layers = decoder_layers(model)
    for g in plan.groups:
        lin = get_linear(layers[g.layers[0]], g.type)
        dtype = lin.weight.dtype
        basis = make_basis(torch.zeros(lin.in_features, g.rank, dtype=dtype))
        for i in g.layers:
            old = get_linear(layers[i], g.type)
            coef = make_coef(torch.zeros(g.rank, old.out_features, dtype=dtype), old.bias)
            set_linear(layers[i], g.type, FactorizedLinear(basis, coef))


def load_compressed(folder: str | Path):
    """(tokenizer, model, plan, extra) from a folder written by :func:`save_compressed`."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder = Path(folder)
    if not (folder / PLAN).is_file() or not (folder / WEIGHTS).is_file():
        raise InputError(f"{folder.name} is not a compressed model folder (it needs {PLAN} and {WEIGHTS}).")
    meta = json.loads((folder / PLAN).read_text(encoding="utf-8"))
    plan = Plan.from_dict(meta["plan"])
    config = AutoConfig.from_pretrained(folder)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    build_structure(model, plan)
    state = load_file(str(folder / WEIGHTS))
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected:
        raise InputError(f"{folder.name}: the weights file has tensors the plan does not place: {unexpected[:3]}")
    present = {id(t) for name, t in model.state_dict(keep_vars=True).items() if name in state}
    really_missing = [m for m in missing if id(model.state_dict(keep_vars=True)[m]) not in present]
    if really_missing:
        raise InputError(f"{folder.name}: the weights file lacks {really_missing[:3]}")
    model.tie_weights()
    tok = AutoTokenizer.from_pretrained(folder) if (folder / "tokenizer_config.json").exists() else None
    meta.pop("plan")
    return tok, model.eval(), plan, meta


def folder_bytes(folder: str | Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).iterdir() if p.is_file() and p.name == WEIGHTS)
