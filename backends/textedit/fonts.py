"""The fonts the embedded text model is trained on, found by family name through fontconfig.

The files come from Debian packages (fonts-dejavu, fonts-liberation, fonts-freefont-ttf,
fonts-open-sans); their paths differ between systems, so they are looked up with ``fc-list`` by
family and style, never by a fixed path, and a missing font is a clear error naming the package.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class FontFace:
    family: str
    style: str
    package: str  # the Debian package that provides it

    @property
    def name(self) -> str:
        return f"{self.family} {self.style}"


TRAINING_FACES = (
    FontFace("DejaVu Sans", "Bold", "fonts-dejavu-core"),
    FontFace("Liberation Sans", "Bold", "fonts-liberation"),
    FontFace("FreeSans", "Bold", "fonts-freefont-ttf"),
    FontFace("Open Sans", "Bold", "fonts-open-sans"),
    FontFace("Liberation Serif", "Bold", "fonts-liberation"),
    FontFace("DejaVu Serif", "Bold", "fonts-dejavu-core"),
)

# The one face of the "mono" data style (backends.textedit.data.STYLES): fixed advance, so letter i has fixed columns.
MONO_FACE = FontFace("DejaVu Sans Mono", "Bold", "fonts-dejavu-core")


class FontMissingError(RuntimeError):
    """A font the text model needs is not installed."""


@functools.cache
def font_file(face: FontFace) -> str:
    """The file of ``face`` as fontconfig knows it (exact family and style), or :class:`FontMissingError`."""
    if shutil.which("fc-list") is None:
        raise FontMissingError("fontconfig's `fc-list` is not installed (Debian package fontconfig); "
                               "it is needed to find the training fonts")
    out = subprocess.run(["fc-list", f":family={face.family}:style={face.style}", "file"],
                         capture_output=True, text=True, check=False).stdout
    files = sorted(line.strip().rstrip(":") for line in out.splitlines() if line.strip())
    if not files:
        raise FontMissingError(f"font {face.name!r} is not installed; install the Debian package {face.package}")
    return files[0]


def available_faces(faces: tuple[FontFace, ...] = TRAINING_FACES) -> tuple[FontFace, ...]:
    """All of ``faces`` with their files located (raises on the first missing one: training needs them all)."""
    for face in faces:
        font_file(face)
    return faces


@functools.cache
def load_font(face: FontFace, size: int):
    from PIL import ImageFont

    return ImageFont.truetype(font_file(face), size)
