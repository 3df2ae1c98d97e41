"""Training data of the embedded text model: held-out words stay out, prompts tokenize to characters."""

import numpy as np

from backends.textedit import networks as N
from backends.textedit.data import (
    HELD_OUT_WORDS,
    TEMPLATES,
    make_arrays,
    make_sample,
    prompt_for,
    training_word,
)
from backends.textedit.ocr import matches, read


def test_held_out_words_never_in_training():
    rng = np.random.default_rng(0)
    words = {training_word(rng) for _ in range(20000)}
    assert not words & set(HELD_OUT_WORDS)
    assert all(N.MIN_LETTERS <= len(w) <= N.MAX_LETTERS and set(w) <= set(N.ALPHABET) for w in words)


def test_samples_are_deterministic_and_shaped():
    a, b = make_sample(7), make_sample(7)
    assert np.array_equal(a.image, b.image) and a.prompt == b.prompt
    assert a.image.shape == (*N.IMAGE_SIZE, 3) and a.image.dtype == np.uint8
    assert a.prompt.endswith(f'"{a.word}"')
    x0, y0, x1, y1 = a.box
    assert 0 <= x0 < x1 <= N.IMAGE_SIZE[1] and 0 <= y0 < y1 <= N.IMAGE_SIZE[0]
    arrays = make_arrays(range(3))
    assert arrays["images"].shape == (3, *N.IMAGE_SIZE, 3) and len(arrays["prompts"]) == 3


def test_prompts_tokenize_the_word_into_characters():
    tok = N.build_tokenizer()
    for template in TEMPLATES:
        tokens = tok.convert_ids_to_tokens(tok(prompt_for("jazz", template)).input_ids)
        assert "[UNK]" not in tokens
        assert tokens[-7:] == ['"', "j", "a", "z", "z", '"', "[EOS]"]
    assert len(tok(prompt_for("mountain", "board")).input_ids) <= N.MAX_TOKENS


def test_rapidocr_reads_clean_training_renders():
    samples = [make_sample(s) for s in range(40)]
    read_right = np.mean([matches(read(s.image), s.word) for s in samples])
    assert read_right >= 0.9


def test_mono_style_puts_letter_i_in_the_same_columns():
    from backends.textedit.data import render

    rng = np.random.default_rng(3)
    boxes = {(w, t): render(w, t, rng, style="mono").box for w in ("cat", "garden") for t in ("sign", "wall")}
    assert len({b[0] for b in boxes.values()}) == 1  # one left edge for every word and template
    assert boxes[("cat", "sign")] == boxes[("cat", "wall")]
    width_cat = boxes[("cat", "sign")][2] - boxes[("cat", "sign")][0]
    width_garden = boxes[("garden", "sign")][2] - boxes[("garden", "sign")][0]
    assert abs(width_garden - 2 * width_cat) <= 1  # a fixed advance per letter
    assert boxes[("garden", "wall")][2] <= N.IMAGE_SIZE[1]


def test_styles_draw_differently_from_the_same_seed():
    mono, six = make_sample(11, style="mono"), make_sample(11, style="fonts6")
    assert mono.word == six.word and mono.prompt == six.prompt
    assert not np.array_equal(mono.image, six.image)
    assert np.array_equal(six.image, make_sample(11, style="fonts6").image)
