"""Character-level OCR metrics against hand-worked cases (the reference's ``get_p_r_acc``), Levenshtein, MSE/PSNR."""

import numpy as np
import pytest

from backends.textedit.metrics import char_f1, f1, get_p_r_acc, levenshtein, mse, ocr_scores, psnr

EPS = 1e-6


@pytest.mark.parametrize(("pred", "gt", "p", "r", "acc"), [
    ("cat", "cat", 1, 1, 1),
    ("CAT", "cat", 1, 1, 1),  # lowercased
    ("act", "cat", 1, 1, 1),  # a multiset of characters: order does not count
    ("caat", "cat", 3 / 4, 1, 0),  # the second 'a' finds no partner
    ("ca", "cat", 1, 2 / 3, 0),
    ("dog", "cat", 0, 0, 0),
    ("", "cat", 0, 0, 0),
    ("cat", "", 0, 0, 0),
    ("c t", "cat", 2 / 3, 2 / 3, 0),  # the space is an empty character that counts but matches nothing
    ("hello world", "hello world", 1, 1, 1),  # ... or matches the other's space
    ("helloworld", "hello world", 1, 10 / 11, 1),  # accuracy joins the sorted characters: spaces vanish
    ("aab", "abb", 2 / 3, 2 / 3, 0),
])
def test_get_p_r_acc_hand_worked(pred, gt, p, r, acc):
    gp, gr, gacc = get_p_r_acc(pred, gt)
    assert gp == pytest.approx(p, abs=EPS) and gr == pytest.approx(r, abs=EPS) and gacc == acc


def test_f1_of_one_sample():
    s = char_f1("caat", "cat")
    assert s.f1 == pytest.approx(2 * 0.75 * 1 / 1.75, abs=EPS) and s.levenshtein == 1 and s.accuracy == 0


def test_corpus_f1_is_formed_from_the_mean_precision_and_recall():
    """Two samples: P = (1 + 1/3)/2, R = (1 + 1/3)/2 → F1 = 2/3 — not the mean of per-sample F1s."""
    s = ocr_scores(["cat", "dog"], ["cat", "cow"])
    assert s.precision == pytest.approx(2 / 3, abs=EPS) and s.recall == pytest.approx(2 / 3, abs=EPS)
    assert s.f1 == pytest.approx(2 / 3, abs=1e-5) and s.accuracy == 0.5 and s.levenshtein == 1.0 and s.n == 2
    skewed = ocr_scores(["cat", "c"], ["c", "cat"])  # P = (1/3 + 1)/2, R = (1 + 1/3)/2
    per_sample = np.mean([char_f1("cat", "c").f1, char_f1("c", "cat").f1])
    assert skewed.f1 == pytest.approx(f1(2 / 3, 2 / 3), abs=1e-5) and abs(skewed.f1 - per_sample) > 0.1
    with pytest.raises(ValueError):
        ocr_scores(["a"], [])


def test_levenshtein_ignores_case():
    assert levenshtein("Kitten", "sitting") == 3 and levenshtein("CAT", "cat") == 0 and levenshtein("", "abc") == 3


def test_mse_and_psnr_on_the_255_scale():
    a = np.zeros((4, 4, 3), np.uint8)
    b = np.full((4, 4, 3), 10, np.uint8)
    assert mse(a, b) == 100.0 and mse(a / 255.0, b / 255.0) == pytest.approx(100.0)
    assert psnr(a, b) == pytest.approx(20 * np.log10(255) - 10 * np.log10(100))
    assert mse(b, b) == 0 and psnr(b, b) == 100.0
