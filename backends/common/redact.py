"""Server paths out of what people see.

Messages meant for the operator (the CLI, logs) name real paths; whatever reaches a browser or an API
result (error messages, the System tab's registry) goes through :func:`redact_paths` first, which
writes the suite's known folders as ``assets/…``, ``<python packages>/…``, ``$ICLR25_MODELS_DIR/…``,
``$HF_HUB_CACHE/…`` (when they lie outside the home directory), ``$TMPDIR/…`` and ``~/…`` — enough to know where to look, without the server's
own file-system layout.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from .settings import Settings, get_settings


def _roots(settings: Settings) -> list[tuple[str, str]]:
    from huggingface_hub import constants

    home = Path.home().resolve()
    # a folder under the home directory reads best as ~/…; the placeholders name the others
    named = [(settings.models_dir, "$ICLR25_MODELS_DIR"), (Path(constants.HF_HUB_CACHE), "$HF_HUB_CACHE")]
    roots = [(settings.assets_dir, "assets"), (Path(tempfile.gettempdir()), "$TMPDIR"), (home, "~"),
             (Path(__file__).resolve().parents[2], ".")]
    roots += [(root, shown) for root, shown in named if not Path(root).expanduser().resolve().is_relative_to(home)]
    roots += [(Path(p), "<python packages>") for p in sys.path if p.endswith("site-packages")]
    out = []
    for root, shown in roots:
        root = Path(root).expanduser()
        for form in {str(root), str(root.resolve())}:
            if form not in ("", "/", "."):
                out.append((form.rstrip("/"), shown))
    return sorted(out, key=lambda kv: -len(kv[0]))  # the most specific root first


def redact_paths(text: str, settings: Settings | None = None) -> str:
    """``text`` with every absolute path under a known root rewritten relative to it."""
    if not text:
        return text
    for root, shown in _roots(settings or get_settings()):
        text = re.sub(re.escape(root) + r"(?=/|\b|$)", shown.replace("\\", r"\\"), text)
    return text
