"""Build a ``VideoDepthPipeline`` from a registered model: the embedded one or the published checkpoint.

* ``videodepth-embedded``: a pipeline folder (``vae/`` = the space-to-depth codec, ``unet/``,
  ``scheduler/``), fp16 on disk, loaded in fp32 on a CPU;
* ``depth-any-video`` (``hhyangcs/depth-any-video``): SVD's ``AutoencoderKLTemporalDecoder``, the RoPE
  UNet and the interpolation UNet (both :class:`UNetSpatioTemporalRopeConditionModel`, whose names
  match the published state dicts) and the flow-matching scheduler.

Pipelines are cached per (model, device, dtype): models load once per process, one build at a time, and a
failed build is not kept (``backends.common.modelbuild``).
"""

from __future__ import annotations

from pathlib import Path

import torch

from backends.common.modelbuild import cached_model
from backends.common.registry import default_registry

from .networks import SpaceToDepthCodec, UNetSpatioTemporalRopeConditionModel
from .pipeline import VideoDepthPipeline


def load_folder(folder: Path, device: str = "cpu", dtype: torch.dtype = torch.float32,
                name: str = "videodepth") -> VideoDepthPipeline:
    """A pipeline folder in either layout (codec or SVD VAE in ``vae/``; ``unet_interp/`` if present)."""
    import json

    from diffusers import AutoencoderKLTemporalDecoder, FlowMatchEulerDiscreteScheduler

    folder = Path(folder)
    vae_class = json.loads((folder / "vae" / "config.json").read_text()).get("_class_name")
    vae_cls = SpaceToDepthCodec if vae_class == SpaceToDepthCodec.__name__ else AutoencoderKLTemporalDecoder
    vae = vae_cls.from_pretrained(folder / "vae", torch_dtype=dtype).to(device)
    unet = UNetSpatioTemporalRopeConditionModel.from_pretrained(folder / "unet", torch_dtype=dtype).to(device)
    interp = None
    if (folder / "unet_interp" / "config.json").is_file():
        interp = UNetSpatioTemporalRopeConditionModel.from_pretrained(folder / "unet_interp", torch_dtype=dtype).to(device)
    sched = FlowMatchEulerDiscreteScheduler.from_pretrained(folder / "scheduler")
    index = folder / "model_index.json"
    prediction = json.loads(index.read_text()).get("prediction_type", "v_prediction") if index.is_file() else "v_prediction"
    pipe = VideoDepthPipeline(vae=vae, unet=unet.eval(), scheduler=sched, unet_interp=interp, prediction_type=prediction)
    pipe.name = name
    pipe.set_progress_bar_config(disable=True)
    return pipe


@cached_model()
def load_model(model_id: str = "videodepth-embedded", device: str = "cpu", dtype: torch.dtype = torch.float32):
    """The registered model ``model_id``, found locally (``ModelMissingError`` otherwise)."""
    resolved = default_registry().resolve(model_id)
    return load_folder(resolved.path, device, dtype, name=model_id)


def model_for(model_id: str = "videodepth-embedded") -> VideoDepthPipeline:
    """The model as the app, the CLI and a run card's replay run it: on the device the settings select,
    loaded once per process (the Action's ``load``)."""
    from backends.common.device import select_device

    return load_model(model_id, str(select_device()))
