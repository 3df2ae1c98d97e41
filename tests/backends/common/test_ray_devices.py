"""A Ray cluster with GPUs (``serve --ray``): each GPU is one device with its own actors, and as many jobs
run at once as there are GPUs. Ray is told of two GPUs that this machine need not have: the toy action
uses none, it reports which one Ray gave its worker."""

from __future__ import annotations

import pytest

from backends.common.progress import CancelToken, ProgressEvent
from tests.backends.common.toy_action import TOY, local_ray_executor, run_all, toy_request

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def executor():
    yield from local_ray_executor(num_gpus=2)


def test_each_gpu_is_a_device_and_two_jobs_run_at_once_one_per_gpu(executor):
    assert executor.devices == 2 and executor.concurrency == 2  # the app's "gpu" queue limit
    first = executor.run(TOY, toy_request(steps=20, step_seconds=0.05), CancelToken())
    second = executor.run(TOY, toy_request(steps=20, step_seconds=0.05), CancelToken())
    assert isinstance(next(first), ProgressEvent) and isinstance(next(second), ProgressEvent)  # both running
    a, b = run_all(first)[1], run_all(second)[1]
    assert a.pid != b.pid  # the capability has an actor on each device
    assert {a.where["cuda"], b.where["cuda"]} == {"0", "1"}  # each pinned to its own GPU
    assert a.where["device"] == b.where["device"] == "cuda"
    again = run_all(executor.run(TOY, toy_request()))[1]
    assert again.pid in (a.pid, b.pid)  # the next job reuses a device's actor (its model loaded)


def test_the_page_says_heavy_work_runs_on_the_clusters_gpus_not_this_machines_device(executor):
    from app.main import _device_badge
    from backends.common.executor import InProcess, use_executor

    here = _device_badge()
    assert "Ray" not in here  # in-process: this machine's device
    previous = use_executor(executor)
    try:
        badge = _device_badge()
    finally:
        use_executor(previous)
    assert "Ray cluster" in badge and "2 GPU(s)" in badge and "cuda" in badge, badge
    assert InProcess().where() is None
