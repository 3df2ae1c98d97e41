"""Which words a model with a closed, word-level vocabulary knows, answered from its shipped tokenizer file alone.

The embedded 3D Layout model reads prompts with a word-level tokenizer of the primitive world's few dozen words
(colours, shapes, rooms); any other word becomes ``[UNK]`` and the picture means nothing for it. This check reads
``tokenizer/tokenizer.json`` (no torch, no model load), so a page can flag an unknown word while it is typed
instead of after a run. A model with an open vocabulary (SD 1.5's BPE) knows every word: nothing is flagged.
Shared by 3D Layout (its prompts) and Unlearning (the word to forget and the word to map it to).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

MAX_CLOSED_VOCABULARY = 1000  # above this, a tokenizer spells unknown words in pieces: nothing is unknown


def prompt_words(text: str) -> list[str]:
    """The words the model's tokenizer sees: lower case, split on spaces, punctuation on its own."""
    return re.findall(r"[^\W_]+|[^\w\s]|_", str(text).lower())


def unknown_in(text: str, vocabulary: frozenset[str] | None) -> list[str]:
    """Words of ``text`` outside ``vocabulary``, in order, each once (none for an open vocabulary)."""
    if vocabulary is None:
        return []
    out: list[str] = []
    for w in prompt_words(text):
        if w not in vocabulary and w not in out:
            out.append(w)
    return out


@lru_cache(maxsize=8)
def _read_vocabulary(path: str, mtime_ns: int) -> frozenset[str] | None:
    try:
        data = json.loads(Path(path).read_text())
        model = data["model"]
        if model.get("type") != "WordLevel" or len(model["vocab"]) > MAX_CLOSED_VOCABULARY:
            return None
        special = {model.get("unk_token")} | {t.get("content") for t in data.get("added_tokens", [])}
        return frozenset(w for w in model["vocab"] if w not in special)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def model_vocabulary(model_id: str) -> frozenset[str] | None:
    """The closed vocabulary of a registered model, or None (open vocabulary, or the model is not here —
    Generate says so then). Cheap after the first call: the file is read once per change."""
    from backends.common.errors import InputError
    from backends.common.registry import default_registry, model_status

    try:
        status = model_status(default_registry().get(model_id))
    except InputError:
        return None
    if not status.present or status.path is None:
        return None
    tok = Path(status.path) / "tokenizer" / "tokenizer.json"
    if not tok.is_file():
        return None
    return _read_vocabulary(str(tok), tok.stat().st_mtime_ns)
