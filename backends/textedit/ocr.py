"""Read the words in an image with two real offline OCR engines.

* ``rapidocr`` (primary): PP-OCR recognition ONNX models shipped in the wheel, run by onnxruntime;
  the engine is built once per process. On a crop that holds one line of text (the embedded
  model's whole image) recognition alone is enough (~26 ms); ``detect=True`` adds the detector for
  larger images with text somewhere inside.
* ``tesseract`` (second opinion): Debian ``tesseract-ocr`` through ``pytesseract``, single-line mode.

Small images are upscaled first (both engines are trained on text tens of pixels high).
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Literal

import numpy as np
from PIL import Image

from backends.common.errors import InputError

Engine = Literal["rapidocr", "tesseract"]
ENGINES: tuple[Engine, ...] = ("rapidocr", "tesseract")
MIN_WIDTH = 256  # upscale narrower images to this width (RapidOCR reads 32×128 renders reliably at 256 wide)


@dataclass(frozen=True)
class OcrResult:
    text: str  # what the engine read ("" when nothing)
    score: float  # the engine's confidence in [0, 1]
    engine: Engine


_lock = threading.Lock()


@functools.cache
def _rapidocr():
    from rapidocr import RapidOCR

    return RapidOCR(params={"Global.log_level": "error"})


def _as_pil(image) -> Image.Image:
    if isinstance(image, Image.Image):
        return image.convert("RGB")
    arr = np.asarray(image)
    if arr.ndim == 2:
        arr = np.stack([arr] * 3, -1)
    if arr.ndim != 3 or arr.shape[2] not in (3, 4):
        raise InputError(f"OCR needs an H×W×3 image, got an array of shape {arr.shape}.")
    if arr.dtype != np.uint8:
        arr = (np.clip(arr, 0, 1) * 255).round().astype(np.uint8) if arr.dtype.kind == "f" else arr.astype(np.uint8)
    return Image.fromarray(arr[..., :3])


def upscaled(image, min_width: int = MIN_WIDTH) -> Image.Image:
    img = _as_pil(image)
    if img.width < min_width:
        img = img.resize((min_width, max(1, round(img.height * min_width / img.width))), Image.BICUBIC)
    return img


def read(image, engine: Engine = "rapidocr", detect: bool = False) -> OcrResult:
    """The text in ``image`` (PIL image or H×W×3 array) as read by ``engine``, spaces removed.

    ``detect`` runs RapidOCR's text detector first (for images where the text is not the whole
    picture); tesseract always segments the image itself.
    """
    if engine == "rapidocr":
        return _read_rapidocr(upscaled(image), detect)
    if engine == "tesseract":
        return _read_tesseract(upscaled(image, 2 * MIN_WIDTH))
    raise InputError(f"Unknown OCR engine {engine!r}; choose one of {', '.join(ENGINES)}.")


def _read_rapidocr(img: Image.Image, detect: bool) -> OcrResult:
    bgr = np.ascontiguousarray(np.asarray(img)[:, :, ::-1])
    with _lock:  # one ONNX session per process, shared by threads
        out = _rapidocr()(bgr, use_det=detect, use_cls=False)
    texts, scores = list(out.txts or ()), list(out.scores or ())
    if not texts:
        return OcrResult("", 0.0, "rapidocr")
    text = "".join(t.replace(" ", "") for t in texts)
    return OcrResult(text, float(np.mean(scores)), "rapidocr")


def _read_tesseract(img: Image.Image) -> OcrResult:
    import pytesseract

    gray = img.convert("L")
    pad = Image.new("L", (gray.width + 40, gray.height + 40), int(np.median(np.asarray(gray))))
    pad.paste(gray, (20, 20))
    data = pytesseract.image_to_data(pad, config="--psm 7", output_type=pytesseract.Output.DICT)
    words = [(w.strip(), float(c)) for w, c in zip(data["text"], data["conf"], strict=True) if w.strip()]
    if not words:
        return OcrResult("", 0.0, "tesseract")
    return OcrResult("".join(w for w, _ in words), float(np.mean([max(c, 0.0) for _, c in words])) / 100.0,
                     "tesseract")


def matches(result: OcrResult, word: str) -> bool:
    """The read text equals ``word`` ignoring case and non-letters (the embedded model writes capitals)."""
    return _letters(result.text) == _letters(word)


def _letters(s: str) -> str:
    return "".join(ch for ch in s.lower() if ch.isalnum())
