"""What the System tab and ``models list`` report about the installation, without importing heavy libraries."""

from __future__ import annotations

import platform
import sys
from importlib import metadata

LIBRARIES = ("torch", "diffusers", "transformers", "gradio", "gradio_client", "open3d", "numpy",
             "huggingface_hub", "safetensors", "pydantic")


def library_versions(names: tuple[str, ...] = LIBRARIES) -> dict[str, str]:
    """Installed version of each library, read from package metadata (nothing is imported)."""
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def platform_summary() -> str:
    return f"{platform.system()} {platform.release()} · {platform.machine()} · Python {sys.version.split()[0]}"
