"""The words the text-conditioned teacher can forget, and its prompts (torch-free: the tab checks them as typed).

A word is checked against the model's own tokenizer file (``backends.common.vocabulary``): a word it does not know
is flagged by name. Only a colour or a shape of the primitive world can be forgotten, mapped to a word of the same
kind (a colour onto a shape would ask the model for "a blue red"); a word onto itself is refused. A prompt must name
one colour and one shape — "a red cube" — because the detector that reads the images names a "colour shape" pair.
"""

from __future__ import annotations

import re

from backends.common.errors import InputError
from backends.common.vocabulary import model_vocabulary, prompt_words, unknown_in
from backends.synth.scene import COLORS, SHAPES

TEXT_TEACHER_ID = "layout3d-embedded"
TEACHERS = ("shapes", "text")  # the label-conditional teacher of the shapes; 3D Layout's text-to-image model
TEACHER_TITLES = {"shapes": "shapes (label-conditional)", "text": "3D Layout model (text-conditioned)"}
MAX_PROMPTS = 16
# the forget → safe words shown by default on the text teacher
DEFAULT_TEXT_CHOICES: tuple[tuple[str, str], ...] = (("red", "blue"), ("cone", "cylinder"))


def word_kind(word: str) -> str | None:
    """'colour', 'shape', or None for any other word."""
    w = word.strip().lower()
    return "colour" if w in COLORS else "shape" if w in SHAPES else None


def vocabulary() -> frozenset[str] | None:
    """The words the text teacher's tokenizer knows (None when the model is not on this server)."""
    return model_vocabulary(TEXT_TEACHER_ID)


def unknown_words(text: str) -> list[str]:
    """Words of ``text`` the text teacher does not know, as typed (lower case), in order."""
    return unknown_in(text, vocabulary())


def check_word(word: str, what: str) -> str:
    """The word (lower case) when the text teacher knows it and it is a colour or a shape; a clear error otherwise."""
    w = (word or "").strip().lower()
    if not w or len(prompt_words(w)) != 1:
        raise InputError(f"The {what} must be one word (a colour or a shape), not {word!r}.")
    unknown = unknown_words(w)
    if unknown or word_kind(w) is None and w not in (vocabulary() or ()):
        raise InputError(f"The text teacher does not know the word {w!r} (the {what}): it was trained on the "
                         f"primitive world only. Words it can forget: the colours {', '.join(COLORS)} and the shapes "
                         f"{', '.join(SHAPES)}.")
    if word_kind(w) is None:
        raise InputError(f"{w!r} (the {what}) is a word the model knows but not a colour or a shape: only a colour "
                         f"({', '.join(COLORS)}) or a shape ({', '.join(SHAPES)}) can be forgotten or mapped to.")
    return w


def check_word_pair(forget: str, safe: str) -> tuple[str, str]:
    """(forget, safe) words: both known, both colours or both shapes, and not the same word."""
    f, s = check_word(forget, "word to forget"), check_word(safe, "word to map it to")
    if word_kind(f) != word_kind(s):
        raise InputError(f"{f!r} is a {word_kind(f)} and {s!r} a {word_kind(s)}: map a colour onto a colour and a "
                         "shape onto a shape (the prompt keeps its other word).")
    if f == s:
        raise InputError(f"Forgetting {f!r} onto itself changes nothing: choose another {word_kind(f)} to map it to.")
    return f, s


def names(prompt: str, word: str) -> bool:
    """Whether ``prompt`` contains ``word`` as a word."""
    return word in prompt_words(prompt)


def replace_word(prompt: str, word: str, by: str) -> str:
    """The prompt with every whole-word ``word`` replaced by ``by`` (the SD side's prompt rewrite), an article right
    before it following the new word ("an orange cube" → "a red cube")."""
    def swap(m: re.Match) -> str:
        if not m.group(1):
            return by
        return ("an " if by[:1].lower() in "aeiou" else "a ") + by

    return re.sub(rf"(?<![^\W_])(?:(an?) )?{re.escape(word)}(?![^\W_])", swap, prompt, flags=re.IGNORECASE)


def prompt_class(prompt: str) -> tuple[str, str]:
    """(colour, shape) a one-object prompt names (its last of each), or a clear error."""
    words = prompt_words(prompt)
    colours = [w for w in words if w in COLORS]
    shapes = [w for w in words if w in SHAPES]
    if not colours or not shapes:
        raise InputError(f"The prompt {prompt!r} must name a colour and a shape (e.g. 'a red cube'): the detector "
                         "that reads the images names a colour and a shape.")
    return colours[-1], shapes[-1]


def one_object(colour: str, shape: str) -> str:
    """The model's one-object prompt, as its data spells it ('a red cube', 'an orange cone')."""
    return f"{'an' if colour[0] in 'aeiou' else 'a'} {colour} {shape}"


def domain_prompts() -> list[str]:
    """Every one-object prompt of the model's data: 'a <colour> <shape>' (40)."""
    return [one_object(c, s) for s in SHAPES for c in COLORS]


def default_prompts(forget: str) -> str:
    """What the prompts box shows for a forget word: two prompts that name it, two that do not."""
    if word_kind(forget) == "colour":
        other = next(c for c in COLORS if c != forget)
        return "; ".join(one_object(c, s) for c, s in ((forget, "cube"), (forget, "sphere"), (other, "cube"), (other, "cone")))
    o1, o2 = [s for s in SHAPES if s != forget][:2]
    return "; ".join(one_object(c, s) for c, s in (("red", forget), ("blue", forget), ("red", o1), ("green", o2)))


def parse_prompts(text: str) -> list[str]:
    """Prompts separated by ';' or new lines (empty: every 'a <colour> <shape>'); each checked: no unknown word
    (flagged by name), one colour and one shape named."""
    prompts = [p.strip() for p in re.split(r"[;\n]", text or "") if p.strip()]
    if not prompts:
        return domain_prompts()
    if len(prompts) > MAX_PROMPTS:
        raise InputError(f"{len(prompts)} prompts: at most {MAX_PROMPTS} (leave the box empty for all 40).")
    for p in prompts:
        unknown = unknown_words(p)
        if unknown:
            raise InputError(f"The text teacher does not know {', '.join(repr(w) for w in unknown)} (in {p!r}): it "
                             "was trained on the primitive world only (colours, shapes, rooms).")
        prompt_class(p)
    return prompts
