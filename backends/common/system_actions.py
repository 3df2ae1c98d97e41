"""The System tab's long work as actions (``backends.common.action``): the device speed test and a model's
download. Their capability is "system", not a tab of ``backends.CAPABILITIES``: a speed test's card records
a measurement, a download's where a model came from; neither is replayed. Torch-free to import.

The names are those of the Stop keys the app and its tests know (``speed_test``, ``download``): a model
download started beside any tab's model choice is stopped by the same key."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .action import Action
from .errors import InputError
from .speedtest import SpeedTestRequest


@dataclass
class DownloadRequest:
    """One model of the registry from the Hugging Face Hub; ``fp16``: its fp16 weights where published."""

    model_id: str
    fp16: bool = False

    def validate(self) -> None:
        from .registry import default_registry

        hub = [s.id for s in default_registry() if s.source == "hf"]
        if self.model_id not in hub:
            raise InputError(f"Choose a model to download: one of {', '.join(hub)}.")


def _speed_test(request: SpeedTestRequest, model, cancel):
    from .speedtest import run_speed_test

    return run_speed_test(request, cancel)


def _download(request: DownloadRequest, model, cancel):
    from .download import download
    from .registry import default_registry

    spec = default_registry().get(request.model_id)
    variant = "fp16" if request.fp16 and spec.fp16_files else None  # the full weights where no fp16 ones exist
    return download(spec, cancel, variant=variant)


def _download_summary(result) -> dict:
    return {"model_id": result.model_id, "files": list(result.files), "bytes_downloaded": result.bytes_downloaded,
            "seconds": result.seconds, "license": result.license, "variant": result.variant}


SPEED_TEST = Action(
    name="speed_test", capability="system", request_type=SpeedTestRequest, work=_speed_test,
    summary=asdict, heavy=True,  # it measures the device: on the shared queue, never beside generation
    description="Matrix-multiply throughput of the device in use (GFLOP/s).")

DOWNLOAD = Action(
    name="download", capability="system", request_type=DownloadRequest, work=_download,
    summary=_download_summary, heavy=False,  # it waits on the network: a queue of its own
    description="Fetch a registry model from the Hugging Face Hub: licence, progress, resume after Stop.")

ACTIONS = (SPEED_TEST, DOWNLOAD)
