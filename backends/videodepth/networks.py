"""The Depth Any Video denoiser and the embedded model's codec, as diffusers models.

``UNetSpatioTemporalRopeConditionModel`` is SVD's spatio-temporal UNet with the published
checkpoint's changes: no ``added_time_ids`` embedding (no fps / motion-bucket conditioning), RoPE
over true frame indices in every temporal transformer instead of SVD's frame embedding, and a
``position_ids`` argument. Its config keys and state-dict names are those of
``hhyangcs/depth-any-video`` (``unet`` and ``unet_interp``), so the real weights load into it — checked
against the authors' own class, names, shapes and forward pass (``tests/backends/videodepth/test_published_formats.py``).

The embedded model replaces SVD's VAE by :class:`SpaceToDepthCodec`, an exact, weight-free
4×4 space-to-depth: 64×64 frames become 16×16 "latents", the grid the reference UNet works on,
without spending the CPU budget on an autoencoder (and without its reconstruction error).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from diffusers import UNetSpatioTemporalConditionModel
from diffusers.configuration_utils import ConfigMixin, register_to_config
from diffusers.models.modeling_utils import ModelMixin
from diffusers.utils import BaseOutput

from .attention import TransformerSpatioTemporalRopeModel


@dataclass
class UNetSpatioTemporalRopeConditionOutput(BaseOutput):
    sample: torch.Tensor  # B×F×C×h×w


class UNetSpatioTemporalRopeConditionModel(UNetSpatioTemporalConditionModel):
    """SVD's UNet without added time ids, with RoPE temporal attention over ``position_ids``."""

    @register_to_config
    def __init__(self, sample_size: int | None = None, in_channels: int = 8, out_channels: int = 4,
                 down_block_types: tuple[str, ...] = ("CrossAttnDownBlockSpatioTemporal",) * 3 + ("DownBlockSpatioTemporal",),
                 up_block_types: tuple[str, ...] = ("UpBlockSpatioTemporal",) + ("CrossAttnUpBlockSpatioTemporal",) * 3,
                 block_out_channels: tuple[int, ...] = (320, 640, 1280, 1280), addition_time_embed_dim: int = 256,
                 projection_class_embeddings_input_dim: int = 768, layers_per_block: int | tuple[int, ...] = 2,
                 cross_attention_dim: int | tuple[int, ...] = 1024, transformer_layers_per_block: int | tuple = 1,
                 num_attention_heads: int | tuple[int, ...] = (5, 10, 20, 20), num_frames: int = 25):
        super().__init__(sample_size, in_channels, out_channels, tuple(down_block_types), tuple(up_block_types),
                         tuple(block_out_channels), addition_time_embed_dim, projection_class_embeddings_input_dim,
                         layers_per_block, cross_attention_dim, transformer_layers_per_block, num_attention_heads,
                         num_frames)
        del self.add_time_proj, self.add_embedding  # the published UNet has no added time ids
        for block in [*self.down_blocks, self.mid_block, *self.up_blocks]:
            for i, old in enumerate(getattr(block, "attentions", [])):
                block.attentions[i] = TransformerSpatioTemporalRopeModel(
                    old.num_attention_heads, old.attention_head_dim, old.in_channels,
                    num_layers=len(old.transformer_blocks),
                    cross_attention_dim=old.transformer_blocks[0].attn2.cross_attention_dim)

    def forward(self, sample: torch.Tensor, timestep: torch.Tensor | float, encoder_hidden_states: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None, return_dict: bool = True):
        """``sample`` B×F×C×h×w; ``timestep`` (flow-matching σ·1000); ``position_ids`` B×F frame indices.

        ``encoder_hidden_states`` defaults to the zeros the published pipeline passes (no text).
        """
        batch, frames = sample.shape[:2]
        if encoder_hidden_states is None:
            dim = self.down_blocks[0].attentions[0].transformer_blocks[0].attn2.cross_attention_dim \
                if hasattr(self.down_blocks[0], "attentions") else self.config.cross_attention_dim
            encoder_hidden_states = sample.new_zeros(batch, 1, dim)
        t = torch.as_tensor(timestep, device=sample.device, dtype=torch.float32)
        t = t.reshape(-1).expand(batch) if t.numel() in (1, batch) else t
        emb = self.time_embedding(self.time_proj(t).to(sample.dtype)).repeat_interleave(frames, 0)
        context = encoder_hidden_states.repeat_interleave(frames, 0)
        indicator = sample.new_zeros(batch, frames)
        kw = {"encoder_hidden_states": context, "image_only_indicator": indicator, "position_ids": position_ids}

        h = self.conv_in(sample.flatten(0, 1))
        skips = [h]
        for block in self.down_blocks:
            for j, resnet in enumerate(block.resnets):
                h = resnet(h, emb, image_only_indicator=indicator)
                if hasattr(block, "attentions"):
                    h = block.attentions[j](h, **kw)[0]
                skips.append(h)
            for down in block.downsamplers or []:
                h = down(h)
                skips.append(h)
        mid = self.mid_block
        h = mid.resnets[0](h, emb, image_only_indicator=indicator)
        for attn, resnet in zip(mid.attentions, mid.resnets[1:], strict=True):
            h = attn(h, **kw)[0]
            h = resnet(h, emb, image_only_indicator=indicator)
        for i, block in enumerate(self.up_blocks):
            for j, resnet in enumerate(block.resnets):
                h = resnet(torch.cat([h, skips.pop()], 1), emb, image_only_indicator=indicator)
                if hasattr(block, "attentions"):
                    h = block.attentions[j](h, **kw)[0]
            for up in block.upsamplers or []:
                h = up(h, skips[-1].shape[-2:] if i < len(self.up_blocks) - 1 else None)
        h = self.conv_out(self.conv_act(self.conv_norm_out(h)))
        out = h.reshape(batch, frames, *h.shape[1:])
        return UNetSpatioTemporalRopeConditionOutput(sample=out) if return_dict else (out,)


@dataclass
class _ExactLatent:
    """The codec's ``latent_dist``: a point mass (``mode`` and ``sample`` are the code itself)."""

    value: torch.Tensor

    def mode(self) -> torch.Tensor:
        return self.value

    def sample(self, generator=None) -> torch.Tensor:
        return self.value


@dataclass
class CodecEncoderOutput(BaseOutput):
    latent_dist: _ExactLatent


@dataclass
class CodecDecoderOutput(BaseOutput):
    sample: torch.Tensor


class SpaceToDepthCodec(ModelMixin, ConfigMixin):
    """A lossless, weight-free stand-in for a VAE: ``patch_size``² pixels → channels (pixel unshuffle).

    Same calls as diffusers' autoencoders (``encode(x).latent_dist.mode()``, ``decode(z).sample``,
    ``config.scaling_factor``), so the pipeline treats it like SVD's VAE.
    """

    @register_to_config
    def __init__(self, in_channels: int = 3, patch_size: int = 4, scaling_factor: float = 1.0):
        super().__init__()
        # per-channel latent scale (ones: plain space-to-depth); also gives the codec a weights file to save
        self.register_buffer("channel_scale", torch.ones(in_channels * patch_size ** 2))

    @property
    def latent_channels(self) -> int:
        return self.config.in_channels * self.config.patch_size ** 2

    def encode(self, x: torch.Tensor, return_dict: bool = True):
        z = F.pixel_unshuffle(x, self.config.patch_size) * self.channel_scale[:, None, None].to(x.dtype)
        return CodecEncoderOutput(latent_dist=_ExactLatent(z)) if return_dict else (_ExactLatent(z),)

    def decode(self, z: torch.Tensor, num_frames: int | None = None, return_dict: bool = True):
        x = F.pixel_shuffle(z / self.channel_scale[:, None, None].to(z.dtype), self.config.patch_size)
        return CodecDecoderOutput(sample=x) if return_dict else (x,)


EMBEDDED_UNET_CONFIG = dict(
    sample_size=16, in_channels=96, out_channels=48,
    # attention at 8×8 and 4×4 only (at 16×16 it doubles the step time on CPU); 32-channel heads
    down_block_types=("DownBlockSpatioTemporal", "CrossAttnDownBlockSpatioTemporal", "CrossAttnDownBlockSpatioTemporal"),
    up_block_types=("CrossAttnUpBlockSpatioTemporal", "CrossAttnUpBlockSpatioTemporal", "UpBlockSpatioTemporal"),
    block_out_channels=(64, 96, 128), layers_per_block=1, cross_attention_dim=32,
    num_attention_heads=(2, 3, 4), num_frames=16,
)

SCHEDULER_CONFIG = dict(num_train_timesteps=1000, shift=1.0)


def build_unet(**overrides) -> UNetSpatioTemporalRopeConditionModel:
    return UNetSpatioTemporalRopeConditionModel(**{**EMBEDDED_UNET_CONFIG, **overrides})


def build_codec() -> SpaceToDepthCodec:
    return SpaceToDepthCodec(in_channels=3, patch_size=4)
