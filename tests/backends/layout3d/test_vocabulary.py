"""Unknown words are found from the shipped tokenizer file alone, the same words the loaded model finds."""

import pytest

from backends.layout3d.layout import Layout, box_on_floor
from backends.layout3d.vocabulary import (
    check_prompts,
    model_vocabulary,
    prompt_words,
    unknown_in,
    vocabulary_check,
)

SCENE = "a green lawn under a pale blue sky"


def test_words_split_as_the_tokenizer_splits_them():
    assert prompt_words("A Wooden chair, red.") == ["a", "wooden", "chair", ",", "red", "."]


def test_embedded_vocabulary_flags_only_unknown_words():
    vocab = model_vocabulary("layout3d-embedded")
    assert vocab is not None and {"red", "cube", "wooden", ","} <= vocab
    assert "[UNK]" not in vocab
    assert unknown_in("a wooden chair", vocab) == ["chair"]
    assert unknown_in("a red cube, a blue sphere", vocab) == []
    assert unknown_in("anything at all", None) == []  # an open vocabulary knows every word


def test_layout_check_names_the_box_and_is_empty_when_all_known():
    layout = Layout(SCENE, (box_on_floor("a red cube", 0, 1, (0.7, 0.7, 0.7)),
                            box_on_floor("a wooden chair", 0.9, 1, (0.7, 0.7, 0.7))))
    found = vocabulary_check("layout3d-embedded", layout)
    assert found.words == ["chair"]
    assert "box 2 ('a wooden chair'): 'chair'" in found.message()
    assert vocabulary_check("layout3d-embedded", Layout(SCENE, layout.boxes[:1])).message() == ""
    assert check_prompts("a spaceship", [], frozenset({"a"})).found == (("the scene", ("spaceship",)),)


@pytest.mark.parametrize("model", ["sd15", "no-such-model"])
def test_open_or_unknown_models_flag_nothing(model):
    assert model_vocabulary(model) is None


def test_file_vocabulary_matches_the_loaded_tokenizer():
    """The light check reads the same vocabulary the model's tokenizer uses when it generates."""
    from transformers import PreTrainedTokenizerFast

    from backends.common.registry import default_registry

    folder = default_registry().resolve("layout3d-embedded").path / "tokenizer"
    tok = PreTrainedTokenizerFast.from_pretrained(folder)
    vocab = model_vocabulary("layout3d-embedded")
    assert vocab == frozenset(tok.get_vocab()) - set(tok.all_special_tokens)
    for text in ("a wooden chair.", "A Red CUBE", "a cyan torus, a pink cone"):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert (tok.unk_token_id in ids) == bool(unknown_in(text, vocab)), text
