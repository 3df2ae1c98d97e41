"""A per-request pipeline shares the models and owns its scheduler."""

import torch
from diffusers import DDIMScheduler, DiffusionPipeline

from backends.common.pipecopy import for_request


class TinyPipe(DiffusionPipeline):
    def __init__(self, unet, scheduler):
        super().__init__()
        self.register_modules(unet=unet, scheduler=scheduler)
        self._interrupt = False


def test_a_request_copy_shares_the_weights_and_steps_its_own_scheduler():
    pipe = TinyPipe(torch.nn.Linear(2, 2), DDIMScheduler(num_train_timesteps=50))
    pipe.scheduler.set_timesteps(5)
    copy = for_request(pipe)
    assert copy.unet is pipe.unet and copy.scheduler is not pipe.scheduler
    assert dict(copy.scheduler.config) == dict(pipe.scheduler.config)
    copy.scheduler.set_timesteps(2)
    copy._interrupt = True
    assert len(pipe.scheduler.timesteps) == 5 and len(copy.scheduler.timesteps) == 2
    assert pipe._interrupt is False
    assert pipe.config["scheduler"] == copy.config["scheduler"] == ("diffusers", "DDIMScheduler")


def test_a_scheduler_without_a_config_is_deep_copied():
    class Table:
        def __init__(self):
            self.timesteps = [3, 2, 1]

    class Plain:
        def __init__(self):
            self.scheduler, self.model = Table(), torch.nn.Linear(1, 1)

    pipe = Plain()
    copy = for_request(pipe)
    copy.scheduler.timesteps.clear()
    assert pipe.scheduler.timesteps == [3, 2, 1] and copy.model is pipe.model
