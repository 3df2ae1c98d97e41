"""Both OCR engines read a word rendered with PIL; the wrapper validates its input."""

import numpy as np
import pytest
from PIL import Image, ImageDraw

from backends.common.errors import InputError
from backends.textedit import ocr
from backends.textedit.fonts import TRAINING_FACES, load_font


def _render(word: str, size=(128, 32)) -> Image.Image:
    img = Image.new("RGB", size, (235, 230, 215))
    draw = ImageDraw.Draw(img)
    font = load_font(TRAINING_FACES[0], 20)
    x0, y0, x1, y1 = draw.textbbox((0, 0), word, font=font)
    draw.text(((size[0] - (x1 - x0)) // 2 - x0, (size[1] - (y1 - y0)) // 2 - y0), word, font=font, fill=(20, 30, 90))
    return img


@pytest.mark.parametrize("engine", ocr.ENGINES)
def test_engines_read_a_clean_render(engine):
    result = ocr.read(_render("GARDEN"), engine)
    assert result.engine == engine
    assert ocr.matches(result, "garden"), result
    assert 0.0 < result.score <= 1.0


def test_arrays_and_blank_images():
    arr = np.asarray(_render("HELLO"))
    assert ocr.matches(ocr.read(arr), "hello")
    assert ocr.read(np.full((32, 128, 3), 200, np.uint8)).text == ""


def test_bad_input_is_a_clear_error():
    with pytest.raises(InputError, match="engine"):
        ocr.read(_render("CAT"), "easyocr")
    with pytest.raises(InputError, match="H×W×3"):
        ocr.read(np.zeros((4, 4, 5), np.uint8))
