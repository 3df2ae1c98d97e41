"""Keep an exported asset folder about the model only: no paths of the machine that trained it.

``save_pretrained`` of diffusers and transformers writes ``_name_or_path`` — where the weights were
loaded from, a training run's folder — into every ``config.json``; shipped, that names a folder of the
training machine and changes the file's checksum with it.
"""

from __future__ import annotations

import json
from pathlib import Path


def drop_name_or_path(folder: str | Path) -> list[Path]:
    """Remove ``_name_or_path`` from every ``config.json`` under ``folder``; the files changed."""
    changed = []
    for path in sorted(Path(folder).rglob("config.json")):
        config = json.loads(path.read_text())
        if "_name_or_path" in config:
            del config["_name_or_path"]
            path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
            changed.append(path)
    return changed


if __name__ == "__main__":
    import sys

    for name in sys.argv[1:]:
        for p in drop_name_or_path(name):
            print(p)
