import pytest
import torch

from backends.counterfactual.networks import BridgeDenoiser, ShapeClassifier
from backends.counterfactual.pipeline import RCSBPipeline
from backends.counterfactual.schedule import BridgeSchedule

TINY_BRIDGE = dict(
    sample_size=16, in_channels=4, out_channels=3, layers_per_block=1, block_out_channels=(8, 16),
    down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
    attention_head_dim=8, norm_num_groups=4,
)


@pytest.fixture
def tiny_models():
    torch.manual_seed(0)
    bridge = BridgeDenoiser.from_config(TINY_BRIDGE)
    classifier = ShapeClassifier(num_classes=5, width=4, image_size=16)
    return bridge.eval(), classifier.eval()


@pytest.fixture
def tiny_pipeline(tiny_models):
    return RCSBPipeline(*tiny_models, BridgeSchedule(100))
