"""Loading a causal language model (tokenizer + model) by registry id, local folder or Hub id.

Why here: the embedded SmolLM2-135M-Instruct (a GGUF file that transformers de-quantises) is spoken
with by one capability and compressed by another; both find it through the model registry, and
neither imports the other. A registry id of kind ``gguf-llm`` loads its GGUF; anything else goes to
``from_pretrained`` (a folder the user has, or a Hub id already in the cache).
"""

from __future__ import annotations

from .errors import InputError
from .modelbuild import BUILD_LOCK, check_built


class NotACausalLM(InputError):
    """The id names something that is not a causal (decoder-only) language model."""


def resolve_lm(model_id: str) -> tuple[str, dict]:
    """(where to load from, extra ``from_pretrained`` kwargs) for a registry id, folder or Hub id."""
    from .registry import default_registry

    registry = default_registry()
    by_hub_id = [s.id for s in registry if s.source == "hf" and s.location == model_id]
    if by_hub_id:  # a registry model named by its Hub id: where `models download` put it (or the HF cache)
        model_id = by_hub_id[0]
    if model_id in registry:
        found = registry.resolve(model_id)
        spec = found.spec
        if spec.kind == "gguf-llm":
            return str(found.path), {"gguf_file": spec.files[0]}
        return str(found.path), {}
    return model_id, {}


def load_causal_lm(model_id: str, dtype=None):
    """(tokenizer, model in eval mode) for ``model_id``; :class:`NotACausalLM` when it is not one."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    where, kwargs = resolve_lm(model_id)
    with BUILD_LOCK:
        try:
            config = AutoConfig.from_pretrained(where, local_files_only=True, **kwargs)
        except (OSError, ValueError) as exc:
            raise NotACausalLM(f"{model_id!r} is neither a model the suite knows nor a model folder or cached "
                               f"Hub id ({exc.__class__.__name__}: {str(exc)[:200]}).") from exc
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

        if config.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
            raise NotACausalLM(f"{model_id!r} is a {config.model_type!r} model, not a causal language model: "
                               "compression needs a decoder-only LM (Llama, Mistral, Qwen2, SmolLM …).")
        tok = AutoTokenizer.from_pretrained(where, local_files_only=True, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(where, local_files_only=True,
                                                     dtype=dtype or torch.float32, **kwargs).eval()
    return tok, check_built(model, model_id)
