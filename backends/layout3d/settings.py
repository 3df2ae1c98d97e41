"""Settings of the 3D Layout capability, read from the environment (prefix ``ICLR25_LAYOUT3D_``) and ``.env``.

    ICLR25_LAYOUT3D_SCENE_MEMORY_MB=2048 iclr25-studio serve

The suite's own settings (``backends.common.settings``) hold what every capability shares; what only this one
needs lives here, so adding a capability edits nothing in ``common``.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Layout3DSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ICLR25_LAYOUT3D_", env_file=".env", extra="ignore")

    scene_memory_mb: int = Field(1024, ge=16, description="3D Layout scenes kept between stages, all users (MB); "
                                                          "past it the least recently used scene is dropped")


def get_layout3d_settings() -> Layout3DSettings:
    """The capability's settings as the environment has them now (read when the scene store is first built)."""
    return Layout3DSettings()
