"""The two networks of the capability: the bridge denoiser (a diffusers UNet2DModel) and the classifier.

Both are built from a config dict and saved as safetensors + config.json, so training scripts, the
registry and tests all load them the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

BRIDGE_CONFIG = dict(
    sample_size=32, in_channels=4, out_channels=3, layers_per_block=2, block_out_channels=(32, 64, 128),
    down_block_types=("DownBlock2D", "DownBlock2D", "AttnDownBlock2D"),
    up_block_types=("AttnUpBlock2D", "UpBlock2D", "UpBlock2D"), attention_head_dim=32, norm_num_groups=16,
)


class BridgeDenoiser(nn.Module):
    """ε_θ(x_n, n) of the bridge. With ``mask_channel`` the editable mask is a 4th input channel
    (the embedded model); without it the net sees only x_n, like I2SB's ImageNet checkpoint."""

    def __init__(self, unet, mask_channel: bool = True):
        super().__init__()
        self.unet = unet
        self.mask_channel = mask_channel

    def forward(self, xt: torch.Tensor, step, mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.mask_channel:
            if mask is None:
                raise ValueError("this bridge needs the mask as input")
            xt = torch.cat([xt, mask.to(xt.dtype).expand(xt.shape[0], 1, *xt.shape[2:])], 1)
        t = torch.as_tensor(step, device=xt.device).reshape(-1).expand(xt.shape[0])
        return self.unet(xt, t).sample

    @classmethod
    def from_config(cls, config: dict | None = None) -> BridgeDenoiser:
        from diffusers import UNet2DModel

        cfg = dict(BRIDGE_CONFIG if config is None else config)
        return cls(UNet2DModel(**cfg), mask_channel=cfg["in_channels"] == 4)

    def save(self, folder: str | Path) -> None:
        self.unet.save_pretrained(str(folder))

    @classmethod
    def load(cls, folder: str | Path) -> BridgeDenoiser:
        from diffusers import UNet2DModel

        unet = UNet2DModel.from_pretrained(str(folder))
        return cls(unet, mask_channel=unet.config.in_channels == 4).eval()


class ShapeClassifier(nn.Module):
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
    def load(cls, folder: str | Path) -> ShapeClassifier:
        from safetensors.torch import load_file

        folder = Path(folder)
        model = cls(**json.loads((folder / "config.json").read_text()))
        model.load_state_dict(load_file(folder / "model.safetensors"))
        return model.eval()
