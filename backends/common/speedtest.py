"""A measured device speed (matrix-multiply throughput), so a person sees what the selected device delivers.

It is long work in the suite's protocol — a generator of progress events ending in a result — so the
System tab shows a progress bar and a Stop button that really stops it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from .device import select_device, select_dtype
from .errors import InputError
from .progress import CancelToken, ProgressEvent, track


@dataclass
class SpeedTestRequest:
    size: int = 512
    repeats: int = 10
    device: str | None = None

    def validate(self) -> SpeedTestRequest:
        if not isinstance(self.size, int) or not 16 <= self.size <= 8192:
            raise InputError(f"Matrix size must be a whole number from 16 to 8192, got {self.size!r}.")
        if not isinstance(self.repeats, int) or not 1 <= self.repeats <= 1000:
            raise InputError(f"Repeats must be a whole number from 1 to 1000, got {self.repeats!r}.")
        return self


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

    request.validate()
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
