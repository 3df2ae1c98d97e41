"""Which linear layers of a Llama-family decoder are compressed, and which share an input Gram matrix.

Why one table: calibration, factorisation, the module swap and the saved file all name a weight by
its short type (q, k, v, o, up, gate, down) and its layer; the Gram matrix of a type is that of its
input, so q/k/v use one matrix per layer (the attention input) and up/gate another (the MLP input).
"""

from __future__ import annotations

from backends.common.errors import InputError

TYPES = ("q", "k", "v", "o", "up", "gate", "down")
MODULE = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
          "up": "mlp.up_proj", "gate": "mlp.gate_proj", "down": "mlp.down_proj"}
GRAM_OF = {"q": "attn", "k": "attn", "v": "attn", "o": "o", "up": "mlp", "gate": "mlp", "down": "down"}
# The module whose input each Gram matrix is taken from (one hook per layer and input).
GRAM_SOURCE = {"attn": "k", "o": "o", "mlp": "up", "down": "down"}


def decoder_layers(model):
    """The model's list of decoder layers; InputError for layouts other than Llama's."""
    layers = getattr(getattr(model, "model", None), "layers", None)
    if layers is None or not len(layers):
        raise InputError(f"{type(model).__name__} has no model.layers: Basis Sharing here handles Llama-family "
                         "decoders (Llama, Mistral, Qwen2, SmolLM).")
    for path in MODULE.values():
        if _get(layers[0], path) is None:
            raise InputError(f"{type(model).__name__} has no {path} in its layers: only Llama-family layouts "
                             "(q/k/v/o and gate/up/down projections) are supported.")
    return layers


def _get(module, path: str):
    for part in path.split("."):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


def get_linear(layer, t: str):
    return _get(layer, MODULE[t])


def set_linear(layer, t: str, new) -> None:
    parent_path, _, name = MODULE[t].rpartition(".")
    setattr(_get(layer, parent_path), name, new)
