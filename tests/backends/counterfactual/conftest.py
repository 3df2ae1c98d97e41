"""Tiny random configs of the capability's classes, as diffusers' fast tests build them: (4, 8) channels."""

import pytest
import torch

from backends.counterfactual.networks import BridgeDenoiser, ShapeClassifier
from backends.counterfactual.pipeline import RCSBPipeline
from backends.counterfactual.schedule import BridgeSchedule

TINY_BRIDGE = dict(
    sample_size=16, in_channels=4, out_channels=3, layers_per_block=1, block_out_channels=(4, 8),
    down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
    attention_head_dim=4, norm_num_groups=2,
)


def dummy_components(seed: int = 0) -> dict:
    """``RCSBPipeline(**dummy_components())``: a 16×16 bridge with the mask channel, a 5-class classifier."""
    torch.manual_seed(seed)
    bridge = BridgeDenoiser.from_config(TINY_BRIDGE)
    classifier = ShapeClassifier(num_classes=5, width=4, image_size=16)
    return dict(bridge=bridge.eval(), classifier=classifier.eval(), scheduler=BridgeSchedule(100))


@pytest.fixture
def tiny_models():
    c = dummy_components()
    return c["bridge"], c["classifier"]


@pytest.fixture
def tiny_pipeline():
    pipe = RCSBPipeline(**dummy_components())
    pipe.set_progress_bar_config(disable=True)
    return pipe
