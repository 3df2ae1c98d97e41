"""Side-by-side panels: for one class, a column per method, each image with the classifier's reading under it."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

SCALE = 3
CAPTION_H = 14
TITLE_H = 16


def _font(size: int = 11):
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without sized default fonts
        return ImageFont.load_default()


def class_panel(columns: dict[str, np.ndarray], captions: dict[str, list[str]], titles: dict[str, str],
                bad: dict[str, list[bool]] | None = None) -> np.ndarray:
    """``columns``: method → k uint8 images (k×S×S×3, S = 32 or 64); ``captions``: method → k readings; ``bad`` marks readings
    shown in red (e.g. a forgotten class still read as itself). Returns an RGB uint8 image."""
    methods = list(columns)
    k = max(len(v) for v in columns.values())
    size = max(int(np.asarray(v).shape[1]) for v in columns.values() if len(v)) if any(len(v) for v in columns.values()) else 32
    cell = size * max(1, (32 * SCALE) // size)  # 32×32 shown at 96, the text teacher's 64×64 at 128
    col_w = max(cell, 110)
    w = col_w * len(methods)
    h = TITLE_H + k * (cell + CAPTION_H)
    img = Image.new("RGB", (w, h), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    font = _font()
    for j, m in enumerate(methods):
        x0 = j * col_w
        draw.text((x0 + 3, 2), titles.get(m, m), fill=(0, 0, 0), font=font)
        for i, im in enumerate(columns[m]):
            y0 = TITLE_H + i * (cell + CAPTION_H)
            tile = Image.fromarray(np.asarray(im, np.uint8)).resize((cell, cell), Image.NEAREST)
            img.paste(tile, (x0 + (col_w - cell) // 2, y0))
            red = bad is not None and bad.get(m, [False] * k)[i]
            draw.text((x0 + 3, y0 + cell + 1), captions[m][i], fill=(200, 0, 0) if red else (0, 0, 0), font=font)
    return np.asarray(img)
