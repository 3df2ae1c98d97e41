"""Seeding: one call makes a run repeatable, and generators are made per request, not globally."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import numpy as np

from .errors import InputError

if TYPE_CHECKING:
    import torch

MAX_SEED = 2**32 - 1


def check_seed(seed: int) -> int:
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
        raise InputError(f"Seed must be a whole number between 0 and {MAX_SEED}, got {seed!r}.")
    return seed


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch's global generators (for training scripts and tests)."""
    import torch

    check_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def torch_generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A private torch generator, as diffusers pipelines take: requests do not disturb each other."""
    import torch

    return torch.Generator(device=device).manual_seed(check_seed(seed))


def numpy_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(check_seed(seed))
