"""Device and dtype selection: one place decides, settings or the environment can override.

Never hard-code "cuda": ask :func:`select_device`. torch is imported lazily so that building the
app stays fast.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import InputError
from .settings import get_settings

if TYPE_CHECKING:
    import torch


def select_device(preference: str | None = None) -> torch.device:
    """The device to compute on: ``preference`` or the settings' ``device``; ``auto`` picks the best.

    An explicit device that is not available is an :class:`InputError`, not a silent fallback.
    """
    import torch

    pref = (preference or get_settings().device).lower()
    if pref == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    if pref.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InputError(f"Device '{pref}' was requested but CUDA is not available on this machine.")
        index = int(pref.split(":")[1]) if ":" in pref else 0
        if index >= torch.cuda.device_count():
            raise InputError(f"Device '{pref}' was requested but only {torch.cuda.device_count()} CUDA device(s) exist.")
        return torch.device(pref)
    if pref == "mps":
        if not _mps_available():
            raise InputError("Device 'mps' was requested but Apple MPS is not available on this machine.")
        return torch.device("mps")
    if pref == "cpu":
        return torch.device("cpu")
    raise InputError(f"Unknown device '{pref}': use auto, cpu, cuda, cuda:N or mps.")


def select_dtype(device: torch.device, preference: str | None = None) -> torch.dtype:
    """float32 on CPU (as diffusers does), float16 on accelerators, unless settings say otherwise."""
    import torch

    pref = preference or get_settings().dtype
    if pref == "auto":
        return torch.float32 if device.type == "cpu" else torch.float16
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[pref]


def _mps_available() -> bool:
    import torch

    backend = getattr(torch.backends, "mps", None)
    return bool(backend and backend.is_available())


@dataclass
class Accelerator:
    index: int
    name: str
    total_memory_gb: float
    free_memory_gb: float | None = None


@dataclass
class DeviceReport:
    """What the machine offers, for the System tab and ``models list``."""

    selected: str
    dtype: str
    cuda_available: bool
    mps_available: bool
    cpu_name: str
    cpu_count: int
    torch_threads: int
    ram_total_gb: float | None
    accelerators: list[Accelerator] = field(default_factory=list)

    def summary(self) -> str:
        if self.accelerators:
            acc = ", ".join(f"{a.name} ({a.total_memory_gb:.0f} GB)" for a in self.accelerators)
            return f"{self.selected} · {acc}"
        return f"{self.selected} · {self.cpu_name} · {self.cpu_count} cores"


def device_report() -> DeviceReport:
    import torch

    device = select_device()
    accelerators = []
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            free = None
            try:
                free = torch.cuda.mem_get_info(i)[0] / 2**30
            except RuntimeError:
                pass
            accelerators.append(Accelerator(i, props.name, props.total_memory / 2**30, free))
    return DeviceReport(
        selected=str(device),
        dtype=str(select_dtype(device)).replace("torch.", ""),
        cuda_available=torch.cuda.is_available(),
        mps_available=_mps_available(),
        cpu_name=_cpu_name(),
        cpu_count=os.cpu_count() or 1,
        torch_threads=torch.get_num_threads(),
        ram_total_gb=_ram_total_gb(),
        accelerators=accelerators,
    )


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def _ram_total_gb() -> float | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return None
