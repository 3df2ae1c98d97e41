"""Shared output of every benchmark: a markdown table, a JSON file, a one-line summary."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

from backends.common.redact import redact_paths

RESULTS = Path(__file__).parent / "results"


def markdown_table(headers: list[str], rows: list[list]) -> str:
    def fmt(v):
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write_results(name: str, payload: dict) -> Path:
    RESULTS.mkdir(exist_ok=True)
    payload = {**payload, "machine": f"{platform.machine()} · {platform.processor() or 'cpu'}",
               "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    path = RESULTS / f"{name}.json"
    path.write_text(redact_paths(json.dumps(payload, indent=2)) + "\n")  # results speak of the project, not this machine
    return path
