"""Synthetic training data of the embedded text model: words written on signs, shirts, walls, labels.

Each sample is a 32×128 image of one word of 3–8 letters, written in capitals in one of several
Debian fonts, at a random size, colour and position, on a template's background (a sign on a sky,
a t-shirt's fabric, a brick wall, a label on a jar, a poster, a wooden board) with mild clutter,
and its prompt ``<template> that says "<word>"``. Training words are pronounceable pseudo-words and
common English words; the **held-out** words (``HELD_OUT_WORDS``, the bench's and the model card's
test set) never appear in a training image or prompt.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from backends.textedit.fonts import MONO_FACE, TRAINING_FACES, FontFace, load_font
from backends.textedit.networks import ALPHABET, IMAGE_SIZE, MAX_LETTERS, MIN_LETTERS

TEMPLATES = {
    "sign": "a sign that says",
    "shirt": "a t-shirt that says",
    "wall": "a brick wall that says",
    "label": "a label that says",
    "poster": "a poster that says",
    "board": "a wooden board that says",
}
LENGTH_WEIGHTS = {3: 3, 4: 3, 5: 3, 6: 2, 7: 2, 8: 1}  # shorter words more often: easier to learn first
assert sorted(LENGTH_WEIGHTS) == list(range(MIN_LETTERS, MAX_LETTERS + 1))

# Test words: never used in training (images or prompts). Common English words of 3–8 letters.
HELD_OUT_WORDS = (
    "cat", "dog", "sun", "red", "map", "box", "fox", "jam", "key", "owl", "pen", "zip", "hat", "cup",
    "book", "fish", "lamp", "milk", "rain", "star", "tree", "wind", "frog", "jazz", "park", "gold",
    "apple", "bread", "chair", "dream", "green", "house", "light", "music", "ocean", "pizza", "smile",
    "tiger", "water", "zebra", "quiet", "lemon",
    "garden", "forest", "market", "orange", "silver", "winter", "coffee", "yellow", "museum",
    "balloon", "kitchen", "morning", "rainbow", "station", "welcome", "picture",
    "mountain", "elephant", "sunshine", "festival", "birthday", "computer",
)

# Training words besides the pseudo-words (disjoint from HELD_OUT_WORDS, checked at import).
COMMON_WORDS = (
    "art", "bag", "bar", "bed", "bus", "car", "day", "ear", "egg", "eye", "fan", "fun", "gas", "gym", "ice",
    "joy", "kid", "leg", "man", "net", "oil", "pet", "pie", "sea", "sky", "tea", "toy", "van", "web", "yes",
    "zoo", "bake", "bird", "blue", "boat", "cake", "city", "cool", "door", "farm", "fire", "game", "girl",
    "hand", "home", "king", "lake", "love", "moon", "nice", "open", "pink", "ring", "road", "rock", "sale",
    "shop", "snow", "song", "time", "town", "wave", "wolf", "work", "yard", "zone", "beach", "black",
    "candy", "cloud", "dance", "earth", "field", "fruit", "glass", "happy", "horse", "juice", "lucky",
    "money", "night", "paint", "party", "plant", "queen", "radio", "river", "sugar", "table", "toast",
    "train", "video", "white", "world", "youth", "animal", "bottle", "bridge", "butter", "castle",
    "circle", "cookie", "dinner", "doctor", "flower", "friend", "guitar", "island", "jungle", "letter",
    "monkey", "office", "pepper", "planet", "rabbit", "school", "spring", "street", "summer", "ticket",
    "travel", "bicycle", "chicken", "country", "factory", "freedom", "holiday", "journey", "library",
    "monster", "penguin", "pumpkin", "quality", "science", "theater", "weather", "airplane", "baseball",
    "business", "champion", "cucumber", "dinosaur", "football", "hospital", "kangaroo", "language",
    "treasure", "universe", "vacation", "whatever", "question", "sandwich",
)
assert not set(COMMON_WORDS) & set(HELD_OUT_WORDS)

_ONSETS = ("b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "qu", "r", "s", "t", "v", "w", "x", "y",
           "z", "br", "cl", "dr", "fl", "gr", "pl", "sh", "st", "th", "tr", "ch", "sk", "sp", "")
_VOWELS = ("a", "e", "i", "o", "u", "y", "ai", "ea", "oo", "ou")
_CODAS = ("", "", "n", "r", "s", "t", "x", "k", "m", "l", "ng", "st", "ck", "z", "p", "d", "g", "f")


@dataclass(frozen=True)
class DataStyle:
    """How the words are drawn. ``mono`` is what the shipped model learned; ``fonts6`` its first, harder version.

    ``mono`` writes every word left-aligned in one monospaced bold font at one size, so letter *i*
    always sits in the same columns: the cross-attention has to learn one column → letter-index map
    rather than one per font, size and offset (with six fonts, random sizes and offsets a 1.5 M-parameter
    UNet learned letter-like blocks but no spelling in 5,000 steps).
    """

    faces: tuple[FontFace, ...]
    em_size: int | None = None  # fixed font size (left-aligned at ``left``); None: random cap height 13–18 px, centred
    left: int = 6
    clutter: int = 3  # at most this many small marks around the word


STYLES = {"fonts6": DataStyle(TRAINING_FACES), "mono": DataStyle((MONO_FACE,), em_size=24, clutter=0)}
DEFAULT_STYLE = "mono"  # the shipped model's (LoRA fine-tuning draws its batches in it; the VAE learned fonts6)


@dataclass
class Sample:
    image: np.ndarray  # H×W×3 uint8
    word: str  # lowercase letters
    template: str
    prompt: str
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 of the written word (for OCR crops and edit regions)


def prompt_for(word: str, template: str = "sign") -> str:
    return f'{TEMPLATES[template]} "{word}"'


def pseudo_word(rng: np.random.Generator, length: int) -> str:
    """A pronounceable string of exactly ``length`` letters (syllables of onset + vowel + coda)."""
    while True:
        s = ""
        while len(s) < length:
            s += _ONSETS[rng.integers(len(_ONSETS))] + _VOWELS[rng.integers(len(_VOWELS))]
            if rng.random() < 0.4:
                s += _CODAS[rng.integers(len(_CODAS))]
        s = s[:length]
        if s not in _HELD_OUT_SET and set(s) <= _ALPHABET_SET:
            return s


_HELD_OUT_SET = frozenset(HELD_OUT_WORDS)
_ALPHABET_SET = frozenset(ALPHABET)
_LENGTHS = np.array(sorted(LENGTH_WEIGHTS))
_LENGTH_P = np.array([LENGTH_WEIGHTS[n] for n in _LENGTHS], float) / sum(LENGTH_WEIGHTS.values())


def training_word(rng: np.random.Generator) -> str:
    if rng.random() < 0.25:
        return COMMON_WORDS[rng.integers(len(COMMON_WORDS))]
    return pseudo_word(rng, int(rng.choice(_LENGTHS, p=_LENGTH_P)))


# ---------------------------------------------------------------- rendering

def _rgb(rng, lo=0, hi=255) -> tuple[int, int, int]:
    return tuple(int(v) for v in rng.integers(lo, hi + 1, 3))


def _luma(c) -> float:
    return 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]


def _contrasting(rng, background) -> tuple[int, int, int]:
    """A random text colour at least ~100 luma levels away from ``background``."""
    dark = _luma(background) > 128
    for _ in range(50):
        c = _rgb(rng, 0, 90) if dark else _rgb(rng, 170, 255)
        if abs(_luma(c) - _luma(background)) > 100:
            return c
    return (0, 0, 0) if dark else (255, 255, 255)


def _background(rng, template: str, draw: ImageDraw.ImageDraw, w: int, h: int) -> tuple[int, int, int]:
    """Paint the template's background; return the colour the text will be written on."""
    if template == "sign":
        sky = _rgb(rng, 90, 230)
        draw.rectangle((0, 0, w, h), fill=sky)
        panel = _rgb(rng, 0, 255)
        m = int(rng.integers(1, 4))
        draw.rectangle((m, m, w - 1 - m, h - 1 - m), fill=panel, outline=_rgb(rng, 0, 120), width=1)
        return panel
    if template == "shirt":
        fabric = _rgb(rng, 0, 255)
        draw.rectangle((0, 0, w, h), fill=fabric)
        seam = tuple(int(np.clip(v + rng.integers(-30, 31), 0, 255)) for v in fabric)
        draw.line((0, int(rng.integers(0, 4)), w, int(rng.integers(0, 4))), fill=seam, width=1)
        return fabric
    if template == "wall":
        brick, mortar = _rgb(rng, 90, 200), _rgb(rng, 150, 230)
        brick = (brick[0], brick[1] // 2, brick[2] // 3)
        draw.rectangle((0, 0, w, h), fill=mortar)
        bh = int(rng.integers(6, 10))
        for row, y in enumerate(range(0, h, bh)):
            off = (row % 2) * 8
            for x in range(-off, w, 16):
                draw.rectangle((x + 1, y + 1, x + 15, y + bh - 1), fill=brick)
        return brick
    if template == "label":
        jar = _rgb(rng, 0, 200)
        draw.rectangle((0, 0, w, h), fill=jar)
        paper = _rgb(rng, 190, 255)
        draw.rounded_rectangle((4, 3, w - 5, h - 4), radius=5, fill=paper)
        return paper
    if template == "poster":
        paper = _rgb(rng, 0, 255)
        draw.rectangle((0, 0, w, h), fill=paper)
        for _ in range(int(rng.integers(1, 4))):  # decorative shapes near the edges
            x = int(rng.choice([rng.integers(0, 14), rng.integers(w - 14, w)]))
            y = int(rng.integers(0, h))
            r = int(rng.integers(2, 6))
            draw.ellipse((x - r, y - r, x + r, y + r), fill=_rgb(rng))
        return paper
    if template == "board":
        wood = (int(rng.integers(110, 200)), int(rng.integers(60, 130)), int(rng.integers(20, 70)))
        draw.rectangle((0, 0, w, h), fill=wood)
        for _ in range(5):  # grain
            y = int(rng.integers(0, h))
            draw.line((0, y, w, y + int(rng.integers(-2, 3))), fill=tuple(max(0, v - 30) for v in wood), width=1)
        return wood
    raise ValueError(f"unknown template {template!r}")


def _clutter(rng, draw, w, h, box, most: int = 3) -> None:
    """A few small marks (dots, short strokes) kept off the word's box."""
    for _ in range(int(rng.integers(0, most + 1))):
        for _try in range(10):
            x, y = int(rng.integers(0, w)), int(rng.integers(0, h))
            if not (box[0] - 3 <= x <= box[2] + 3 and box[1] - 3 <= y <= box[3] + 3):
                break
        else:
            continue
        if rng.random() < 0.5:
            r = int(rng.integers(1, 3))
            draw.ellipse((x - r, y - r, x + r, y + r), fill=_rgb(rng))
        else:
            dx = int(rng.integers(-5, 6))
            draw.line((x, y, x + dx, y + int(rng.integers(-2, 3))), fill=_rgb(rng), width=1)


def _fit_font(face: FontFace, text: str, cap_height: int, max_width: int, draw):
    size = max(6, round(cap_height / 0.72))
    while True:
        font = load_font(face, size)
        x0, y0, x1, y1 = draw.textbbox((0, 0), text, font=font)
        if x1 - x0 <= max_width or size <= 8:
            return font, (x0, y0, x1, y1)
        size -= 1


def render(word: str, template: str, rng: np.random.Generator, face: FontFace | None = None,
           style: str = DEFAULT_STYLE) -> Sample:
    """One training image of ``word`` on ``template`` in ``style`` (colours, position, clutter from ``rng``)."""
    h, w = IMAGE_SIZE
    spec = STYLES[style]
    img = Image.new("RGB", (w, h))
    draw = ImageDraw.Draw(img)
    under = _background(rng, template, draw, w, h)
    face = face or spec.faces[rng.integers(len(spec.faces))]
    text = word.upper()
    if spec.em_size is None:
        font, (bx0, by0, bx1, by1) = _fit_font(face, text, int(rng.integers(13, 19)), w - 10, draw)
        tw, th = bx1 - bx0, by1 - by0
        x = int((w - tw) / 2 + rng.integers(-max(0, (w - 10 - tw) // 3), max(0, (w - 10 - tw) // 3) + 1))
        y = int((h - th) / 2 + rng.integers(-2, 3))
    else:  # one size, left-aligned, cap height centred: letter i always in the same columns
        font = load_font(face, spec.em_size)
        _, by0, _, by1 = draw.textbbox((0, 0), "H", font=font)
        bx0, tw, th = 0, round(font.getlength(text)), by1 - by0
        x, y = spec.left, (h - th) // 2
    box = (x, y, x + tw, y + th)
    if spec.clutter:
        _clutter(rng, draw, w, h, box, spec.clutter)
    draw.text((x - bx0, y - by0), text, font=font, fill=_contrasting(rng, under))
    return Sample(np.asarray(img, dtype=np.uint8).copy(), word, template, prompt_for(word, template), box)


def make_sample(seed: int, words: Sequence[str] | None = None, style: str = DEFAULT_STYLE) -> Sample:
    """Sample ``seed``: a training word (or one of ``words``), a template, a rendering — all from the seed."""
    rng = np.random.default_rng(seed)
    word = training_word(rng) if words is None else words[rng.integers(len(words))]
    template = list(TEMPLATES)[rng.integers(len(TEMPLATES))]
    return render(word, template, rng, style=style)


def make_arrays(seeds: Sequence[int], style: str = DEFAULT_STYLE) -> dict[str, np.ndarray]:
    samples = [make_sample(int(s), style=style) for s in seeds]
    return {"images": np.stack([s.image for s in samples]), "words": np.array([s.word for s in samples]),
            "prompts": np.array([s.prompt for s in samples]), "boxes": np.array([s.box for s in samples], np.int16)}


def cached_training_set(data_dir: Path, n: int, first_seed: int = 0, style: str = DEFAULT_STYLE) -> dict[str, np.ndarray]:
    """``n`` training samples (seeds ``first_seed``…) in ``style``, rendered once and cached as an ``.npz``."""
    from backends.common.datacache import cached_arrays

    name = "textedit_train" if style == "fonts6" else f"textedit_{style}_train"
    return cached_arrays(Path(data_dir) / f"{name}_{first_seed}_{n}.npz", range(first_seed, first_seed + n),
                         functools.partial(make_arrays, style=style))


def held_out_prompts(template: str | None = None) -> list[tuple[str, str]]:
    """(word, prompt) of every held-out word, on one template or cycling through all of them."""
    names = list(TEMPLATES)
    return [(w, prompt_for(w, template or names[i % len(names)])) for i, w in enumerate(HELD_OUT_WORDS)]
