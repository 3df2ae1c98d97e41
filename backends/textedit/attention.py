"""Activation patching of the text keys/values of chosen attention layers, as diffusers attention processors.

The paper (``luk-st/t2i-text-localization``, diffusers copy in ``py-xis/t2i``) finds the layers that
write text by giving one layer at a time the keys/values of another prompt B while everything else
sees prompt A. One processor class covers the three kinds of text attention of its models:

* ``cross``    — ``attn2`` of every ``BasicTransformerBlock`` of a ``UNet2DConditionModel`` (SD, SDXL,
  the embedded model): ``key = to_k(enc_B)``, ``value = to_v(enc_B)``;
* ``joint``    — the joint attention of an ``SD3Transformer2DModel`` block: only the text stream's
  ``add_k_proj``/``add_v_proj`` (the image K/V and ``add_q_proj`` stay), from a prompt-B run,
  because the text tokens themselves change from block to block;
* ``added_kv`` — IF's ``AttnAddedKVProcessor`` attentions (``SimpleCrossAttn*`` blocks): the text
  ``add_k_proj``/``add_v_proj`` from a prompt-B run.

For every kind the text projections' outputs are **recorded** in a run of prompt B (same noise, same
steps) and **replayed** in the run of prompt A from ``start_step`` on, for all heads or a subset —
the reference's ``run_with_cache`` / ``attn_heads_idx_to_patch`` / ``timestep_start_patching``. For
``cross`` layers this is exactly ``to_k(enc_B)``: the projection of B's embedding, recorded. The
processor wraps the layer's own processor and swaps the projection outputs with a forward hook, so
an unpatched layer runs the untouched diffusers code (a patched run with B = A is bit-identical).

Layers are named by module name and by a global execution-order index (``curr_transformer_idx`` in
the reference: SDXL's 70 ``attn2`` run down → mid → up; its text layers 55, 56 are
``up_blocks.0.attentions.2.transformer_blocks.{1,2}.attn2``). A shared ``PatchController`` says, per
denoising step, which layers record or patch — the controller pattern of ``backends/layout3d``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field

import torch

from backends.common.errors import InputError

KINDS = ("cross", "joint", "added_kv")
TEXT_PROJECTIONS = {"cross": ("to_k", "to_v"), "joint": ("add_k_proj", "add_v_proj"),
                    "added_kv": ("add_k_proj", "add_v_proj")}
MODES = ("plain", "record", "patch")
_SECTION = {"down_blocks": 0, "mid_block": 1, "up_blocks": 2, "transformer_blocks": 0}


@dataclass(frozen=True)
class TextLayer:
    """One attention layer that reads the prompt: its execution-order index, module name and size."""

    index: int
    name: str
    kind: str
    heads: int
    params: int  # parameters of the attention module (q/k/v/out and, for joint/added K/V, the text projections)
    text_kv_params: int  # parameters of its text key/value projections alone

    @property
    def label(self) -> str:
        return f"{self.index}: {self.name}"


def _kind(name: str, module) -> str | None:
    from diffusers.models.attention_processor import Attention

    if not isinstance(module, Attention):
        return None
    if getattr(module, "add_k_proj", None) is not None:
        return "joint" if module.context_pre_only is not None else "added_kv"
    if module.is_cross_attention and name.split(".")[-1] == "attn2":
        return "cross"
    return None


def _execution_key(name: str) -> tuple:
    """down → mid → up (a UNet), then block / attention / transformer-block numbers in order."""
    head = name.split(".")[0]
    return _SECTION.get(head, 3), tuple(int(n) for n in re.findall(r"(?<=\.)\d+(?=\.|$)", name))


def text_layers(denoiser: torch.nn.Module) -> list[TextLayer]:
    """Every text-reading attention layer of a UNet / SD3 transformer, in execution order."""
    found = [(name, module, kind) for name, module in denoiser.named_modules()
             if (kind := _kind(name, module)) is not None]
    found.sort(key=lambda f: _execution_key(f[0]))
    layers = []
    for i, (name, module, kind) in enumerate(found):
        kv = sum(p.numel() for n in TEXT_PROJECTIONS[kind] for p in getattr(module, n).parameters())
        layers.append(TextLayer(i, name, kind, module.heads, sum(p.numel() for p in module.parameters()), kv))
    return layers


def parameter_shares(layers: Iterable[TextLayer], denoiser_params: int) -> tuple[float, float]:
    """(text K/V share, whole-module share) of ``layers`` among ``denoiser_params`` parameters.

    The first is how the paper counts its localized parameters — the projections whose outputs the
    patch replaces: three SDXL ``attn2`` layers' ``to_k``/``to_v`` are its 0.61%, SD3 block 10's
    ``add_k_proj``/``add_v_proj`` its 0.23%. The second counts q/k/v/out, what the LoRA trains.
    """
    layers = list(layers)
    return (sum(layer.text_kv_params for layer in layers) / denoiser_params,
            sum(layer.params for layer in layers) / denoiser_params)


def find_layers(layers: Sequence[TextLayer], wanted: Iterable[str | int]) -> list[TextLayer]:
    """Layers by module name, execution index (``17`` or ``"17"``) or label (``"17: name"``).

    Raises :class:`InputError` naming the unknown ones and what exists.
    """
    by_name = {layer.name: layer for layer in layers}
    out, unknown = [], []
    for w in wanted:
        key = str(w).strip()
        idx = key.split(":", 1)[0].strip()
        if key in by_name:
            out.append(by_name[key])
        elif idx.isdigit() and int(idx) < len(layers):
            out.append(layers[int(idx)])
        else:
            unknown.append(key)
    if unknown:
        sample = ", ".join(f"{layer.index} ({layer.name})" for layer in layers[:4])
        raise InputError(f"Unknown layer {', '.join(map(repr, unknown))}: this model has {len(layers)} text layers, "
                         f"numbered 0–{len(layers) - 1} in execution order (e.g. {sample}, …).")
    return sorted(set(out), key=lambda layer: layer.index)


@dataclass
class PatchController:
    """Per-call state shared by the processors of one denoiser.

    ``mode``: ``plain`` (every layer runs untouched), ``record`` (the ``layers`` store their text K/V
    projections of each step in ``cache``) or ``patch`` (the ``layers`` take them from ``cache`` from
    ``start_step`` on; ``heads[name]`` limits a layer to some heads).
    """

    mode: str = "plain"
    layers: frozenset[str] = frozenset()
    heads: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    start_step: int = 0
    step: int = 0
    cache: dict = field(default_factory=dict)  # {(layer name, step): (k_out, v_out)}
    patched: set = field(default_factory=set)  # {(layer name, step)} actually patched in this call

    def reset(self, **values) -> None:
        """Back to plain attention with nothing recorded (then apply ``values``)."""
        if values.get("mode", "plain") not in MODES:
            raise ValueError(f"unknown patch mode {values['mode']!r}; one of {MODES}")
        self.__dict__.update(PatchController(**values).__dict__)

    def acts_on(self, name: str) -> bool:
        if self.mode == "record":
            return name in self.layers
        return self.mode == "patch" and name in self.layers and self.step >= self.start_step


class TextPatchProcessor:
    """Wraps a layer's own processor; records or replaces its text K/V projections when told to."""

    def __init__(self, controller: PatchController, layer: TextLayer, original):
        self.controller = controller
        self.layer = layer
        self.original = original

    def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None, **kwargs):
        c = self.controller
        call = dict(encoder_hidden_states=encoder_hidden_states, attention_mask=attention_mask, **kwargs)
        if not c.acts_on(self.layer.name):
            return self.original(attn, hidden_states, **call)
        names = TEXT_PROJECTIONS[self.layer.kind]
        with ExitStack() as stack:
            for slot, proj in enumerate(names):
                handle = getattr(attn, proj).register_forward_hook(self._hook(slot, attn.heads))
                stack.callback(handle.remove)
            return self.original(attn, hidden_states, **call)

    def _hook(self, slot: int, heads: int):
        c, name = self.controller, self.layer.name

        def record(module, args, out):
            kv = c.cache.setdefault((name, c.step), [None, None])
            kv[slot] = out.detach()

        def replay(module, args, out):
            try:
                new = c.cache[(name, c.step)][slot]
            except KeyError:
                raise RuntimeError(f"no recorded text keys/values of {name} at step {c.step}; "
                                   "run prompt B with mode='record' first") from None
            if new.shape != out.shape:
                raise ValueError(f"{name}: prompt B's text K/V have shape {tuple(new.shape)}, "
                                 f"the run's {tuple(out.shape)} (same batch, steps and guidance needed)")
            c.patched.add((name, c.step))
            only = c.heads.get(name)
            if only is None:
                return new.to(out.dtype)
            mixed = out.clone()
            view, src = mixed.view(*out.shape[:-1], heads, -1), new.view(*out.shape[:-1], heads, -1)
            view[..., list(only), :] = src[..., list(only), :].to(out.dtype)
            return mixed

        return record if c.mode == "record" else replay


def install(denoiser: torch.nn.Module, controller: PatchController) -> list[TextLayer]:
    """Put a ``TextPatchProcessor`` on every text layer of ``denoiser`` (others keep their processor)."""
    layers = text_layers(denoiser)
    modules = dict(denoiser.named_modules())
    for layer in layers:
        module = modules[layer.name]
        original = module.processor
        if isinstance(original, TextPatchProcessor):
            original = original.original
        module.set_processor(TextPatchProcessor(controller, layer, original))
    return layers


def uninstall(denoiser: torch.nn.Module) -> None:
    """Give every text layer back its own processor."""
    for module in denoiser.modules():
        if isinstance(getattr(module, "processor", None), TextPatchProcessor):
            module.set_processor(module.processor.original)


def check_heads(layers: Sequence[TextLayer], heads: Mapping[str, Iterable[int]] | None) -> dict[str, tuple[int, ...]]:
    """``{layer name: head indices}`` validated against each layer's head count."""
    out = {}
    by_name = {layer.name: layer for layer in layers}
    for name, idx in (heads or {}).items():
        layer = by_name.get(name)
        if layer is None:
            raise InputError(f"Heads were given for {name!r}, which is not one of the patched layers.")
        idx = tuple(sorted({int(i) for i in idx}))
        bad = [i for i in idx if not 0 <= i < layer.heads]
        if bad or not idx:
            raise InputError(f"Layer {layer.label} has heads 0–{layer.heads - 1}; got {list(idx) or 'none'}.")
        out[name] = idx
    return out
