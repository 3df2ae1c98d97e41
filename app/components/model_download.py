"""Downloading a paper's model from the page: the System tab's buttons and the one beside each tab's model choice.

:func:`download_stream` runs the ``download`` action (``backends.common.system_actions``) for one model and turns its events
into the status text a person reads (the licence first, then bytes, rate and time left, then where it went),
with this session's Stop. :func:`download_beside` puts a *Download* button next to a tab's model choice,
shown while the chosen model (or a part it needs, e.g. SD 1.5 + the depth ControlNet) is missing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import gradio as gr

from backends.common.errors import Cancelled, DownloadError
from backends.common.redact import redact_paths
from backends.common.registry import default_registry, model_status

from .errors import as_gr_error, user_errors
from .longwork import CANCELS, stream


def downloadable() -> list[str]:
    """Every registered model that ``models download`` can fetch (the Hub's)."""
    return [s.id for s in default_registry() if s.source == "hf"]


def download_stream(model_id: str, fp16: bool, request: gr.Request | None,
                    progress: gr.Progress | None) -> Iterator[str]:
    """Stream one download into the status text; Stop (this session's) ends it, a failure is shown and raised."""
    from backends.common.errors import InputError
    from backends.common.system_actions import DOWNLOAD, DownloadRequest

    request_ = DownloadRequest(model_id or "", bool(fp16))
    try:
        request_.validate()
    except InputError as e:
        raise as_gr_error(e) from e
    spec = default_registry().get(model_id)
    token = CANCELS.start(request, DOWNLOAD.name)
    licence = ""
    try:
        for kind, value in stream(_with_messages(DOWNLOAD.run(request_, token)), progress):
            if kind == "preview" and isinstance(value, str):
                licence = licence or value
                yield value
            elif kind == "preview":
                yield f"{licence}  \n{value.line()}"
            else:
                yield (f"{licence}  \n**{spec.id} is ready:** {len(value.files)} files "
                       f"({value.bytes_downloaded / 2**20:.1f} MB fetched in {value.seconds:.1f} s) in "
                       f"`{redact_paths(str(value.folder))}`.")
    except Cancelled:
        yield f"{licence}  \nStopped: what arrived is kept; press Download again to resume."
    except DownloadError as e:
        yield f"**Download failed.** {redact_paths(str(e))}"
        raise as_gr_error(e) from e
    finally:
        CANCELS.finish(request, DOWNLOAD.name, token)


def _with_messages(work):
    """The licence event (no preview of its own) as a text preview, so the page shows it first."""
    from backends.common.progress import ProgressEvent

    for item in work:
        if isinstance(item, ProgressEvent) and item.preview is None:
            item = ProgressEvent(item.fraction, item.message, preview=item.message)
        yield item


def missing_parts(choice: str | None, parts: Mapping[str, tuple[str, ...]] | None = None) -> list[str]:
    """The Hub models that ``choice`` needs (itself, or its ``parts``) and that are not present here."""
    registry = default_registry()
    needed = (parts or {}).get(choice or "", (choice,) if choice in registry else ())
    return [m for m in needed if registry.get(m).source == "hf" and not model_status(registry.get(m)).present]


def download_beside(model: gr.Dropdown, prefix: str, parts: Mapping[str, tuple[str, ...]] | None = None) -> None:
    """A row under ``model`` — what is missing, *Download*, *Stop*, progress — shown while the choice is missing."""
    with gr.Column(visible=False, elem_id=f"{prefix}-download-row") as row:
        what = gr.Markdown(elem_id=f"{prefix}-download-what")
        with gr.Row():
            button = gr.Button("Download", variant="primary", size="sm", elem_id=f"{prefix}-download")
            stop = gr.Button("Stop", variant="stop", size="sm", elem_id=f"{prefix}-download-stop")
    status = gr.Markdown(elem_id=f"{prefix}-download-status")

    def show(choice: str):
        missing = missing_parts(choice, parts)
        if not missing:
            return gr.update(visible=False), ""
        return gr.update(visible=True), (f"**{choice}** needs {', '.join(f'`{m}`' for m in missing)} from the "
                                         "Hugging Face Hub (not here yet).")

    @user_errors
    def fetch(choice: str, request: gr.Request, progress=gr.Progress()):
        for model_id in missing_parts(choice, parts):
            yield from download_stream(model_id, False, request, progress)

    def stop_download(request: gr.Request) -> str:
        return "Stopping…" if CANCELS.cancel(request, "download") else "Nothing is downloading."

    model.change(show, inputs=model, outputs=[row, what], api_visibility="private", queue=False)
    button.click(fetch, inputs=model, outputs=status, api_visibility="private",
                 concurrency_id="download").then(show, inputs=model, outputs=[row, what], api_visibility="private")
    stop.click(stop_download, outputs=status, api_visibility="private", queue=False)
