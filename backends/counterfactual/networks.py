"""The two networks of the capability: the bridge denoiser (a diffusers UNet2DModel) and the classifier.

Both are built from a config dict and saved as safetensors + config.json, so training scripts, the
registry and tests all load them the same way. Both are also components of ``RCSBPipeline``: as
diffusers ``ModelMixin`` classes whose ``save_pretrained`` / ``from_pretrained`` keep these folder
formats, ``DiffusionPipeline.save_pretrained`` writes them into a pipeline folder and
``from_pretrained`` reads them back (model_index.json names them by module and class).
"""

from __future__ import annotations

from pathlib import Path

import torch
from diffusers import ModelMixin

from backends.common.cnn import SmallClassifier


class FolderComponent(ModelMixin):
    """A pipeline component kept in its own folder format (its ``save(folder)`` / ``load(folder)``)."""

    def save_pretrained(self, save_directory: str | Path, **kwargs) -> None:
        self.save(save_directory)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | Path, torch_dtype: torch.dtype | None = None,
                        **kwargs):
        """What ``DiffusionPipeline.from_pretrained`` calls; loading options other than the dtype do not apply."""
        model = cls.load(pretrained_model_name_or_path)
        return model.to(torch_dtype) if torch_dtype is not None else model


class ShapeClassifier(SmallClassifier, FolderComponent):
    """The capability's classifier (``backends.common.cnn.SmallClassifier``) as a pipeline component."""

BRIDGE_CONFIG = dict(
    sample_size=32, in_channels=4, out_channels=3, layers_per_block=2, block_out_channels=(32, 64, 128),
    down_block_types=("DownBlock2D", "DownBlock2D", "AttnDownBlock2D"),
    up_block_types=("AttnUpBlock2D", "UpBlock2D", "UpBlock2D"), attention_head_dim=32, norm_num_groups=16,
)


class BridgeDenoiser(FolderComponent):
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
        """The UNet2DModel's own folder (config.json + diffusion_pytorch_model.safetensors)."""
        self.unet.save_pretrained(str(folder))

    @classmethod
    def load(cls, folder: str | Path) -> BridgeDenoiser:
        from diffusers import UNet2DModel

        unet = UNet2DModel.from_pretrained(str(folder))
        return cls(unet, mask_channel=unet.config.in_channels == 4).eval()
