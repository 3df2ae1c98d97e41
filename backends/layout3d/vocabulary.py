"""Which words of the prompts a 3D Layout model knows, answered from its shipped tokenizer file alone.

The embedded model reads prompts with a word-level tokenizer of the primitive world's few dozen words
(colours, shapes, rooms); any other word becomes ``[UNK]`` and the picture means nothing for it. This
check reads ``tokenizer/tokenizer.json`` (no torch, no model load), so the editor can flag an unknown
word while it is typed, instead of after a generation. A model with an open vocabulary (SD 1.5's BPE)
knows every word: nothing is flagged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .layout import Layout

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


@dataclass(frozen=True)
class UnknownWords:
    """Unknown words per prompt of a layout: ``where`` is 'the scene' or 'box N (its prompt)'."""

    found: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def words(self) -> list[str]:
        out: list[str] = []
        for _, ws in self.found:
            out.extend(w for w in ws if w not in out)
        return out

    def message(self) -> str:
        """One sentence a person can act on; empty when every word is known."""
        if not self.found:
            return ""
        parts = "; ".join(f"{where}: {', '.join(repr(w) for w in ws)}" for where, ws in self.found)
        return (f"The model does not know these words ({parts}); it was trained on the primitive world only "
                "(colours, shapes, rooms). Results for those words are not meaningful.")


def check_prompts(scene_prompt: str, box_prompts: list[str], vocabulary: frozenset[str] | None) -> UnknownWords:
    """Unknown words of the scene prompt and of every box's prompt."""
    found = []
    scene = unknown_in(scene_prompt, vocabulary)
    if scene:
        found.append(("the scene", tuple(scene)))
    for i, p in enumerate(box_prompts):
        ws = unknown_in(p, vocabulary)
        if ws:
            found.append((f"box {i + 1} ({p!r})", tuple(ws)))
    return UnknownWords(tuple(found))


def check_layout_words(layout: Layout, vocabulary: frozenset[str] | None) -> UnknownWords:
    return check_prompts(layout.scene_prompt, [b.prompt for b in layout.boxes], vocabulary)


def vocabulary_check(model_id: str, layout: Layout) -> UnknownWords:
    """Unknown words of a layout for a model, from its tokenizer file alone: light enough to run as a
    person types (no model load, nothing waits behind generation)."""
    return check_layout_words(layout, model_vocabulary(model_id))
