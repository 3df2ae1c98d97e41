"""DenoisingLoopState: the interrupt / num_timesteps flags our four DiffusionPipelines share."""

import pytest
import torch
from diffusers import DiffusionPipeline

from backends.common.pipeline_state import DenoisingLoopState
from backends.counterfactual.pipeline import RCSBPipeline
from backends.layout3d.pipeline import BuildAScenePipeline
from backends.textedit.pipeline import TextEditPipeline
from backends.videodepth.pipeline import VideoDepthPipeline


class _Pipe(DenoisingLoopState, DiffusionPipeline):
    def __init__(self, net: torch.nn.Module, steps: int = 3):
        super().__init__()
        self.register_modules(net=net)
        self.register_to_config(steps=steps)


@pytest.mark.parametrize("cls", [RCSBPipeline, BuildAScenePipeline, TextEditPipeline, VideoDepthPipeline])
def test_the_project_pipelines_share_it(cls):
    assert issubclass(cls, DenoisingLoopState) and issubclass(cls, DiffusionPipeline)
    assert "interrupt" not in vars(cls) and "num_timesteps" not in vars(cls)


def test_flags_start_cleared_and_stay_per_instance():
    a, b = _Pipe(torch.nn.Linear(2, 2)), _Pipe(torch.nn.Linear(2, 2))
    assert a.interrupt is False and a.num_timesteps == 0
    a._interrupt, a._num_timesteps = True, 7
    assert a.interrupt is True and a.num_timesteps == 7
    assert b.interrupt is False and b.num_timesteps == 0
    assert DenoisingLoopState._interrupt is False and DenoisingLoopState._num_timesteps == 0
    with pytest.raises(AttributeError):
        a.interrupt = False  # read-only: a call or a callback sets _interrupt


def test_components_and_config_come_from_the_pipelines_own_init():
    pipe = _Pipe(torch.nn.Linear(2, 2), steps=5)
    pipe._num_timesteps = 4
    assert set(pipe.components) == {"net"}
    assert "_interrupt" not in pipe.config and "_num_timesteps" not in pipe.config
    assert pipe.config.steps == 5
