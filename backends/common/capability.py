"""What the suite knows of a capability, in one place: ``backends/<name>/spec.py`` holds its :class:`Capability`.

The tab's title and group, the paper, the one-line summary the README and the header use, and what its
embedded model knows (the out-of-domain notice, ``backends.common.ood``) are here, so nothing in ``common/``,
``bench/`` or ``training/`` keeps a list of capabilities of its own: they loop over ``backends.specs()``.
"""

from __future__ import annotations

from dataclasses import dataclass

# the top-level tab groups, in the order the app shows them (the System tab comes last, on its own)
GROUPS = ("Images & 3D", "Video", "Games & agents", "Language models", "Optimization & statistics")


@dataclass(frozen=True)
class Domain:
    """What a capability's embedded model knows, and the real models that would serve instead."""

    knows: str
    real_models: tuple[str, ...]
    real_label: str  # how the page names them


@dataclass(frozen=True)
class Capability:
    """One paper's capability: its name is its folder, its CLI subcommand, its tab, bench and test files."""

    name: str
    title: str  # the tab's title
    group: str  # one of GROUPS
    paper: str  # the paper's method, as the header and the README name it
    summary: str  # what a person does in the tab, one line
    domain: Domain | None = None  # the embedded model's world, where uploads may fall outside it

    def __post_init__(self) -> None:
        if self.group not in GROUPS:
            raise ValueError(f"{self.name}: group {self.group!r} is not one of {GROUPS}")
