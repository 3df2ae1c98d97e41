"""Folders for files a handler returns for download. Gradio copies returned files into its own cache
(cleaned by ``delete_cache``), so only the newest few folders are kept here."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections import deque
from pathlib import Path

_KEEP = 32
_dirs: deque[Path] = deque()
_lock = threading.Lock()


def new_output_dir(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}-"))
    with _lock:
        _dirs.append(path)
        while len(_dirs) > _KEEP:
            shutil.rmtree(_dirs.popleft(), ignore_errors=True)
    return path
