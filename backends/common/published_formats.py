"""Published checkpoint formats, recorded from the authors' code, and the check that a loader matches them.

A *format fixture* (``assets/published-formats/<model-id>.json.gz``) lists, per component of a published
model (``unet``, ``vae``, ``net``, ``ema`` …), every parameter/buffer name its checkpoint holds and its
shape at full size, plus where that list came from (repository, commit, file, config). The fixtures are
written once by ``training/published_formats/`` scripts that build the authors' architecture with their
code and config; nothing here downloads weights.

Each capability answers, for its real models, what its own loader expects at full size
(``backends/<capability>/published.py``: ``expected_format(model_id) -> {component: {name: shape}}``,
built on the meta device); :func:`compare` says what is missing, left over or of the wrong shape.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .settings import default_assets_dir

ASSETS = default_assets_dir() / "published-formats"

Shape = tuple[int, ...]
Format = dict[str, dict[str, Shape]]  # component -> name -> shape


@dataclass(frozen=True)
class PublishedFormat:
    """One published model's names and shapes, and where they were read from."""

    model_id: str
    source: str  # e.g. "NVlabs/I2SB@<commit>: i2sb/network.py Image256Net, config from ..."
    components: Format
    notes: str = ""

    def count(self) -> int:
        return sum(len(names) for names in self.components.values())


@dataclass
class Mismatch:
    """What a loader's expected names/shapes differ in from a published format (empty = matches)."""

    missing: list[str] = field(default_factory=list)  # in the checkpoint, not taken by the loader
    unexpected: list[str] = field(default_factory=list)  # wanted by the loader, not in the checkpoint
    wrong_shape: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.missing or self.unexpected or self.wrong_shape)

    def summary(self, limit: int = 5) -> str:
        parts = [f"{label} {len(items)} (e.g. {items[:limit]})" for label, items in
                 (("missing", self.missing), ("unexpected", self.unexpected), ("wrong shape", self.wrong_shape))
                 if items]
        return "; ".join(parts) or "matches"


def fixture_path(model_id: str) -> Path:
    return ASSETS / f"{model_id}.json.gz"


def write_fixture(fmt: PublishedFormat, folder: Path = ASSETS) -> Path:
    """Write a fixture (sorted, shapes as lists) so regenerating it gives the same bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    payload = {"model_id": fmt.model_id, "source": fmt.source, "notes": fmt.notes,
               "components": {c: {k: list(s) for k, s in sorted(names.items())}
                              for c, names in sorted(fmt.components.items())}}
    path = folder / f"{fmt.model_id}.json.gz"
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(json.dumps(payload, indent=0, sort_keys=True).encode())
    return path


def read_fixture(model_id: str, folder: Path = ASSETS) -> PublishedFormat:
    with gzip.open(folder / f"{model_id}.json.gz", "rb") as f:
        payload = json.loads(f.read())
    components = {c: {k: tuple(s) for k, s in names.items()} for c, names in payload["components"].items()}
    return PublishedFormat(payload["model_id"], payload["source"], components, payload.get("notes", ""))


def available() -> list[str]:
    """Model ids that have a fixture."""
    return sorted(p.name[: -len(".json.gz")] for p in ASSETS.glob("*.json.gz"))


def shapes_of(state: Mapping[str, object]) -> dict[str, Shape]:
    """name -> shape of a state dict (tensors, meta tensors or anything with ``.shape``)."""
    return {k: tuple(int(d) for d in v.shape) for k, v in state.items()}


def compare(published: Mapping[str, Shape], expected: Mapping[str, Shape]) -> Mismatch:
    """Compare one component: the checkpoint's names/shapes vs what the loader takes."""
    missing = sorted(set(published) - set(expected))
    unexpected = sorted(set(expected) - set(published))
    wrong = sorted(k for k in set(published) & set(expected) if tuple(published[k]) != tuple(expected[k]))
    return Mismatch(missing, unexpected, wrong)


def compare_format(published: PublishedFormat, expected: Format) -> dict[str, Mismatch]:
    """Per component; a component present on one side only counts as entirely missing/unexpected."""
    out = {}
    for comp in sorted(set(published.components) | set(expected)):
        out[comp] = compare(published.components.get(comp, {}), expected.get(comp, {}))
    return out


def matches(published: PublishedFormat, expected: Format) -> bool:
    return not any(compare_format(published, expected).values())
