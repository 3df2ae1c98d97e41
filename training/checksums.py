"""Print the sha256 of every file of an embedded asset, to record in its ModelSpec.

    python -m training.checksums assets/counterfactual-bridge
"""

from __future__ import annotations

import sys
from pathlib import Path

from backends.common.registry import sha256_file


def main(argv=None) -> int:
    for folder in (argv or sys.argv[1:]):
        root = Path(folder)
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in {".json", ".safetensors"}
                       and p.name not in {"metrics.json", "training.json"})
        print(f"# {folder}")
        print("sha256={")
        for p in files:
            print(f'    "{p.relative_to(root).as_posix()}": "{sha256_file(p)}",')
        print("},")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
