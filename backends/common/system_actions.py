"""The System tab's long work as actions (``backends.common.action``): the device speed test and a model's
download. Their capability is "system", not a tab of ``backends.CAPABILITIES``: a speed test's card records
a measurement, a download's where a model came from; neither is replayed. Torch-free to import.

The names are those of the Stop keys the app and its tests know (``speed_test``, ``download``): a model
download started beside any tab's model choice is stopped by the same key."""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass

from .action import Action
from .errors import InputError
from .params import param
from .progress import ProgressEvent
from .speedtest import SpeedTestRequest


@dataclass
class DownloadRequest:
    """One model of the registry from the Hugging Face Hub (then the models of ``then``, in order: the parts a
    tab's model choice needs); ``fp16``: the fp16 weights where the repo publishes them."""

    model_id: str = param(label="Model", help="A model of the registry that is on the Hugging Face Hub "
                                              "(`iclr25-studio models list` names them).")
    fp16: bool = param(False, label="fp16 weights", help="Where the repo publishes them: half the download, for a GPU.")
    then: tuple[str, ...] = ()  # more Hub models fetched after it (a tab's choice that needs several parts)

    def models(self) -> tuple[str, ...]:
        return (self.model_id, *self.then)

    def validate(self) -> None:
        from .registry import default_registry

        hub = [s.id for s in default_registry() if s.source == "hf"]
        wrong = [m for m in self.models() if m not in hub]
        if wrong:
            raise InputError(f"Choose a model to download: one of {', '.join(hub)} (not {', '.join(map(str, wrong))}).")


def _speed_test(request: SpeedTestRequest, model, cancel):
    from .speedtest import run_speed_test

    return run_speed_test(request, cancel)


def _download(request: DownloadRequest, model, cancel):
    """Each model of the request in turn: its licence first (a text preview), then its progress (previews of
    :class:`~backends.common.download.DownloadProgress` that carry that licence); the first model's result, with
    the others' in ``also``."""
    from .download import download
    from .registry import default_registry

    results = []
    ids = request.models()
    for i, model_id in enumerate(ids):
        spec = default_registry().get(model_id)
        variant = "fp16" if request.fp16 and spec.fp16_files else None  # the full weights where no fp16 ones exist
        licence = ""
        for item in download(spec, cancel, variant=variant):
            if not isinstance(item, ProgressEvent):
                results.append(item)
                continue
            fraction = (i + item.fraction) / len(ids)
            if item.preview is None:  # the licence: shown before any byte
                licence = item.message
                yield ProgressEvent(fraction, item.message, preview=licence)
            else:
                yield ProgressEvent(fraction, item.message, preview=dataclasses.replace(item.preview, licence=licence))
    first, *also = results
    yield dataclasses.replace(first, also=also)


def _download_summary(result) -> dict:
    return {"model_id": result.model_id, "files": list(result.files), "bytes_downloaded": result.bytes_downloaded,
            "seconds": result.seconds, "license": result.license, "variant": result.variant,
            **({"also": [_download_summary(r) for r in result.also]} if result.also else {})}


SPEED_TEST = Action(
    name="speed_test", capability="system", request_type=SpeedTestRequest, work=_speed_test,
    summary=asdict, heavy=True,  # it measures the device: on the shared queue, never beside generation
    description="Matrix-multiply throughput of the device in use (GFLOP/s).")

DOWNLOAD = Action(
    name="download", capability="system", request_type=DownloadRequest, work=_download,
    summary=_download_summary, heavy=False,  # it waits on the network: a queue of its own
    description="Fetch a registry model from the Hugging Face Hub: licence, progress, resume after Stop.")

ACTIONS = (SPEED_TEST, DOWNLOAD)
