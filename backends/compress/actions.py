"""The LLM Compression capability's actions (``backends.common.action``): the tab's Compress button, the API,
the CLI and run-card replays. Torch-free to import."""

from __future__ import annotations

from backends.common.action import Action

from .requests import CompressRequest


def _load(request: CompressRequest):
    from .service import load_lm

    return load_lm(request.model.strip())


def _compress(request: CompressRequest, lm, cancel):
    from .service import compress_work

    return compress_work(request, lm, cancel)


def _write(result, folder):
    from .outputs import write_files

    return write_files(result, folder)


COMPRESS = Action(
    name="compress_run", capability="compress", request_type=CompressRequest,
    load=_load, work=_compress, write=_write, summary=lambda result: result.to_json(),
    description="Basis Sharing: calibrate, share whitened SVD bases across layers, and compare perplexity, size and "
                "speed with per-layer SVD-LLM and plain SVD at the same ratio.")

ACTIONS = (COMPRESS,)
