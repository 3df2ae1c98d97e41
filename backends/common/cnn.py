"""A small CNN image classifier, saved as safetensors + config.json.

The embedded classifiers of several tabs (counterfactual shapes, the 3D Layout object detector)
are this network at different sizes.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn


class SmallClassifier(nn.Module):
    """A small CNN on [0, 1] RGB images; ``forward`` returns logits."""

    def __init__(self, num_classes: int = 5, width: int = 32, image_size: int = 32):
        super().__init__()
        self.config = dict(num_classes=num_classes, width=width, image_size=image_size)
        w = width

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                                 nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

        self.features = nn.Sequential(block(3, w), nn.MaxPool2d(2), block(w, 2 * w), nn.MaxPool2d(2),
                                      block(2 * w, 4 * w), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(4 * w, num_classes)
        self.register_buffer("mean", torch.tensor([0.5, 0.5, 0.5]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.25, 0.25, 0.25]).view(1, 3, 1, 1))

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features (used for the FID-style distance in the bench)."""
        return self.features((x - self.mean) / self.std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(x))

    def save(self, folder: str | Path) -> None:
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in self.state_dict().items()}, folder / "model.safetensors")
        (folder / "config.json").write_text(json.dumps(self.config, indent=2))

    @classmethod
    def load(cls, folder: str | Path) -> SmallClassifier:
        from safetensors.torch import load_file

        folder = Path(folder)
        model = cls(**json.loads((folder / "config.json").read_text()))
        model.load_state_dict(load_file(folder / "model.safetensors"))
        return model.eval()
