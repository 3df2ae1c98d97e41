"""Which words of a layout's prompts a 3D Layout model knows (the word check itself, from the tokenizer file
alone, is shared: ``backends.common.vocabulary``), so the editor flags an unknown word while it is typed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from backends.common.vocabulary import (  # noqa: F401 (this capability's entry points)
    MAX_CLOSED_VOCABULARY,
    model_vocabulary,
    prompt_words,
    unknown_in,
)

if TYPE_CHECKING:
    from .layout import Layout


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
