"""The Strategy Games capability's typed requests (torch-free: the tab and the action catalog import them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backends.common.errors import InputError
from backends.games import domains

METHODS = ("strategist", "beam")


@dataclass
class ImproveRequest:
    """Run ``iterations`` more STRATEGIST iterations on the run in ``run_dir`` (a new run when it is empty).

    ``run_dir`` is where the run lives and its files are written: an output of the action (a replay of
    its run card points it at ``--out``)."""

    kind: str = domains.DEFAULT_GAME  # what to improve: a key of domains.run_kinds()
    iterations: int = 2
    method: str = "strategist"  # or "beam", the paper's ablation without the idea library
    games: int | None = None  # evaluation games (per pairing or per strategy); None: the game's default
    budget: int | None = None  # search budget per move / decision; None: the game's default
    options: dict[str, Any] = field(default_factory=dict)  # the game's own, e.g. num_cards, guide_side
    seed: int = 0
    workers: int = 1  # local processes for the self-play games
    ray_address: str | None = None  # or Ray tasks on this cluster
    run_dir: Path | None = None  # the run folder (see above)

    def validate(self) -> tuple[str, str]:
        """(game, part); InputError with a sentence for anything out of range."""
        game, part = domains.parse_kind(self.kind)
        if self.method not in METHODS:
            raise InputError(f"Method must be one of {', '.join(METHODS)}, got {self.method!r}.")
        if not 1 <= int(self.iterations) <= 100:
            raise InputError(f"Iterations must be 1 to 100, got {self.iterations!r}.")
        for name in ("games", "budget"):
            value = getattr(self, name)
            if value is not None and not 1 <= int(value) <= 10_000:
                raise InputError(f"{name.capitalize()} must be 1 to 10000, got {value!r}.")
        if int(self.seed) < 0:
            raise InputError("The seed must be 0 or more.")
        return game, part
