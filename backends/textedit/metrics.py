"""The paper's text metrics, computed exactly as its code does (``py-xis/t2i: src/eval/``).

* OCR precision / recall / accuracy are **character-level** (``ocr_eval.get_p_r_acc``): both strings
  are split into characters, each stripped and lowercased (a space becomes an empty string that still
  counts), and matched as a multiset; accuracy is 1 when the sorted characters join to the same string.
* OCR F1 is formed from the **mean** precision and recall over the samples, ``2PR / (P + R + 1e-6)``
  (``notebooks/6.0_attn_patching_plots.ipynb``); for one sample that is its own F1.
* Levenshtein distance of the lowercased strings (``text_distance.get_levenshtein_distances``).
* MSE on 0–255 pixel values and PSNR (``basic_metrics``), through ``backends/common/imagemetrics``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from Levenshtein import distance as _levenshtein

from backends.common.imagemetrics import psnr

__all__ = ["CharScores", "OcrScores", "char_f1", "f1", "get_p_r_acc", "levenshtein", "mse", "ocr_scores", "psnr"]


def get_p_r_acc(pred: str, gt: str) -> tuple[float, float, int]:
    """Character-level precision, recall and accuracy of ``pred`` against ``gt`` — the reference's code."""
    pred_chars = [p.strip().lower() for p in pred]
    gt_chars = [g.strip().lower() for g in gt]
    unmatched_pred, unmatched_gt = list(pred_chars), list(gt_chars)
    for p in pred_chars:
        if p in unmatched_gt:
            unmatched_pred.remove(p)
            unmatched_gt.remove(p)
    precision = (len(pred_chars) - len(unmatched_pred)) / (len(pred_chars) + 1e-8)
    recall = (len(gt_chars) - len(unmatched_gt)) / (len(gt_chars) + 1e-8)
    accuracy = int("".join(sorted(pred_chars)) == "".join(sorted(gt_chars)))
    return precision, recall, accuracy


def f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall + 1e-6)


@dataclass(frozen=True)
class CharScores:
    """One read text against one asked text."""

    precision: float
    recall: float
    accuracy: int
    f1: float
    levenshtein: int


def char_f1(pred: str, gt: str) -> CharScores:
    p, r, acc = get_p_r_acc(pred, gt)
    return CharScores(p, r, acc, f1(p, r), levenshtein(pred, gt))


@dataclass(frozen=True)
class OcrScores:
    """Over a set of samples: mean P, R, accuracy and Levenshtein; F1 of the mean P and R (the paper's)."""

    precision: float
    recall: float
    accuracy: float
    f1: float
    levenshtein: float
    n: int


def ocr_scores(preds: Sequence[str], gts: Sequence[str]) -> OcrScores:
    if len(preds) != len(gts):
        raise ValueError(f"{len(preds)} read texts for {len(gts)} asked texts")
    if not preds:
        raise ValueError("no samples to score")
    prs = np.array([get_p_r_acc(p, g) for p, g in zip(preds, gts, strict=True)], dtype=np.float64)
    p, r, acc = prs.mean(0)
    lev = float(np.mean([levenshtein(pr, g) for pr, g in zip(preds, gts, strict=True)]))
    return OcrScores(float(p), float(r), float(acc), f1(float(p), float(r)), lev, len(preds))


def levenshtein(pred: str, gt: str) -> int:
    return int(_levenshtein(pred.lower(), gt.lower()))


def mse(a: np.ndarray, b: np.ndarray) -> float:
    """Mean squared error of two images on the 0–255 scale (uint8 or [0, 1] floats)."""
    def scale(x):
        x = np.asarray(x)
        return x.astype(np.float64) if x.dtype == np.uint8 else x.astype(np.float64) * 255.0

    return float(np.mean((scale(a) - scale(b)) ** 2))
