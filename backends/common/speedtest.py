"""A measured device speed (matrix-multiply throughput), so a person sees what the selected device delivers.

It is long work in the suite's protocol — a generator of progress events ending in a result — so the
System tab shows a progress bar and a Stop button that really stops it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from .device import select_device, select_dtype
from .params import check_request, param
from .progress import CancelToken, ProgressEvent, track


@dataclass
class SpeedTestRequest:
    """One measurement: ``repeats`` products of two random ``size`` × ``size`` matrices on the device in use."""

    size: int = param(512, minimum=64, maximum=4096, step=64, label="Matrix size",
                      help="Side of the square matrices multiplied: larger measures sustained speed.")
    repeats: int = param(10, minimum=1, maximum=200, label="Repeats",
                         help="Multiplications timed; the speed is their average.")
    device: str | None = None  # the settings' device (not a choice of the tab)


@dataclass
class SpeedTestResult:
    device: str
    dtype: str
    size: int
    repeats: int
    seconds: float
    gflops: float


def run_speed_test(request: SpeedTestRequest, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | SpeedTestResult]:
    import torch

    check_request(request)
    device = select_device(request.device)
    dtype = select_dtype(device)
    gen = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(request.size, request.size, generator=gen).to(device=device, dtype=dtype)
    b = torch.randn(request.size, request.size, generator=gen).to(device=device, dtype=dtype)
    _sync(device)
    elapsed = 0.0
    for _, event in track(range(request.repeats), request.repeats, cancel, "matmul"):
        t0 = time.perf_counter()
        (a @ b).sum().item()
        _sync(device)
        elapsed += time.perf_counter() - t0
        yield event
    flops = 2.0 * request.size**3 * request.repeats
    yield SpeedTestResult(str(device), str(dtype).replace("torch.", ""), request.size, request.repeats,
                          elapsed, flops / max(elapsed, 1e-9) / 1e9)


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)
