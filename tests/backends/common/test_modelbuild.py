"""Models are built once, one at a time, and a failed or meta-holding build is never kept."""

import dataclasses
import threading
import time

import pytest
import torch

from backends.common.errors import ModelBuildError
from backends.common.modelbuild import BUILD_LOCK, cached_model, check_built, meta_tensors


def test_a_build_that_raises_is_not_kept_and_the_next_call_builds_again():
    calls = []

    @cached_model()
    def load(name: str):
        calls.append(name)
        if len(calls) == 1:
            raise OSError("disk hiccup")
        return torch.nn.Linear(2, 2)

    with pytest.raises(OSError, match="hiccup"):
        load("m")
    model = load("m")
    assert load("m") is model and calls == ["m", "m"]


def test_a_build_that_leaves_meta_tensors_is_refused_and_rebuilt():
    from accelerate import init_empty_weights

    calls = []

    @cached_model()
    def load(name: str):
        calls.append(name)
        if len(calls) == 1:
            with init_empty_weights():
                return {"pipe": torch.nn.Sequential(torch.nn.Linear(2, 2))}
        return {"pipe": torch.nn.Sequential(torch.nn.Linear(2, 2))}

    with pytest.raises(ModelBuildError, match=r"'m'.*meta.*pipe\.0\.weight"):
        load("m")
    good = load("m")
    assert not meta_tensors(good) and load("m") is good and len(calls) == 2


def test_defaults_name_the_same_model_and_old_ones_are_dropped():
    calls = []

    @cached_model(maxsize=2)
    def load(name: str, device: str = "cpu"):
        calls.append(name)
        return object()

    a = load("a")
    assert load("a", "cpu") is a and load(name="a", device="cpu") is a and calls == ["a"]
    load("b")
    load("c")  # "a" is the least recently used: dropped
    load("a")
    assert calls == ["a", "b", "c", "a"]


def test_meta_tensors_are_found_through_pipelines_dataclasses_and_containers():
    @dataclasses.dataclass
    class Models:
        pipeline: object
        size: int

    class Pipe:  # callable, as a pipeline is
        def __init__(self, unet):
            self.unet, self.name = unet, "p"

        def __call__(self, prompt):
            return self.unet

    with torch.device("meta"):
        bad = torch.nn.Linear(2, 2)
    models = Models(Pipe(torch.nn.ModuleDict({"down": bad})), 8)
    assert meta_tensors(models) == ["pipeline.unet.down.weight", "pipeline.unet.down.bias"]
    assert meta_tensors((Pipe(torch.nn.Linear(2, 2)), {"x": torch.zeros(1)})) == []
    from diffusers import DDIMScheduler

    from tests.backends.common.test_pipecopy import TinyPipe

    assert meta_tensors({"pipe": TinyPipe(bad, DDIMScheduler())}) == ["pipe.unet.weight", "pipe.unet.bias"]
    with pytest.raises(ModelBuildError, match="2 weight"):
        check_built(models, "the test model")


def test_a_module_built_while_another_thread_builds_under_empty_weights_is_real():
    """accelerate's empty-weights patch is process-wide: without the lock the second build gets meta weights."""
    from accelerate import init_empty_weights

    inside = threading.Event()

    @cached_model()
    def slow(name: str):
        with init_empty_weights():
            m = torch.nn.Linear(4, 4)
            inside.set()
            time.sleep(0.3)  # another thread asks for its model now
        return m.to_empty(device="cpu")

    @cached_model()
    def quick(name: str):
        return torch.nn.Linear(4, 4)

    results = {}
    a = threading.Thread(target=lambda: results.setdefault("slow", slow("a")))
    a.start()
    assert inside.wait(5)
    results["quick"] = quick("b")  # waits for the lock instead of building under the patch
    a.join(5)
    assert not meta_tensors(results) and set(results) == {"slow", "quick"}


def test_the_lock_is_reentrant_a_build_may_load_another_model():
    @cached_model()
    def inner(name: str):
        return torch.nn.Linear(1, 1)

    @cached_model()
    def outer(name: str):
        with BUILD_LOCK:
            return torch.nn.Sequential(inner("i"))

    assert outer("o")[0] is inner("i")
