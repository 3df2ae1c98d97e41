"""The Avatar tab's splat viewer as the browser tests see it: what its canvas shows, and waiting until what
it shows is current (app/static/avatar/viewer.js says so on its root element)."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

ROOT = "#av-viewer-root"


def viewer_pixels(page) -> np.ndarray:
    shot = page.locator(f"{ROOT} .av-canvas canvas").screenshot()
    return np.asarray(Image.open(io.BytesIO(shot)).convert("RGB")).astype(np.int16)


def wait_drawn(page, shown: str, timeout: int = 60_000) -> None:
    """Waits for `shown` (a JS condition on the viewer's root element `v`, true once the change looked for is
    applied) and then for the viewer to have drawn it: data-drawn-version, the version of the last frame drawn
    after Spark had sorted the splats it shows, reaches data-version, which every change bumps."""
    page.wait_for_function(f"(() => {{ const v = document.querySelector('{ROOT}'); return ({shown}) && "
                           "v.dataset.drawnVersion === v.dataset.version; })()", timeout=timeout)
