"""JSON that people send (uploads, pasted text, run cards, CLI flags).

Python's parser answers input nested thousands deep (``[[[[…``) with ``RecursionError``, not a
decoding error, so every reader of such JSON would need a second ``except``. :func:`loads` makes it
one more ``json.JSONDecodeError``: the callers' ordinary "not valid JSON" message covers it.
"""

from __future__ import annotations

import json
from typing import Any


def loads(text: str | bytes) -> Any:
    """``json.loads``; input nested too deeply to parse raises ``json.JSONDecodeError`` too."""
    try:
        return json.loads(text)
    except RecursionError:
        doc = text if isinstance(text, str) else ""
        raise json.JSONDecodeError("nested too deeply", doc, 0) from None
