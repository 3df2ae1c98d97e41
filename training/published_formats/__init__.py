"""Generators of assets/published-formats: each builds an author's architecture with their code and config."""

import subprocess
from pathlib import Path


def commit_of(code: Path) -> str:
    """The commit of the authors' checkout the fixture is recorded from (the ``--commit`` flag covers an export)."""
    try:
        return subprocess.run(["git", "-C", str(code), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        raise SystemExit(f"{code} is not a git checkout; pass --commit") from None
