"""Downloading a paper's model from the page: the System tab's buttons and the one beside each tab's model choice.

Every download is the ``download`` action (``backends.common.system_actions``) bound with
:func:`~app.components.action_button.bind_action`: the licence first, then bytes, rate and time left (the
action's previews, written into the status line), then where the model went; this session's Stop ends it
between two chunks; a failure (gated, no network, a full disk) is a clear message in the status line.
:func:`bind_download` binds one trigger; :func:`download_beside` puts a *Download* row next to a tab's model
choice, shown while the chosen model (or a part it needs, e.g. SD 1.5 + the depth ControlNet) is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import gradio as gr

from backends.common.errors import InputError
from backends.common.redact import redact_paths
from backends.common.registry import default_registry, model_status
from backends.common.system_actions import DOWNLOAD, DownloadRequest

from .action_button import bind_action
from .longwork import CANCELS

STOPPED = "Stopped: the files that arrived whole are kept; press Download again to fetch the rest."
NOTHING_DOWNLOADING = "Nothing is downloading."


def downloadable() -> list[str]:
    """Every registered model that ``models download`` can fetch (the Hub's)."""
    return [s.id for s in default_registry() if s.source == "hf"]


def progress_text(item) -> str:
    """A preview of the download action as the status line shows it: the licence, then under it the progress."""
    if isinstance(item, str):
        return item
    return f"{item.licence}  \n{item.line()}" if item.licence else item.line()


def ready_text(request: DownloadRequest, result, paths) -> tuple[str]:
    """The status line once every model of the request is here: each one's licence and where it went."""
    lines = []
    for r in (result, *result.also):
        lines.append(f"{r.licence_line}  \n**{r.model_id} is ready:** {len(r.files)} files "
                     f"({r.bytes_downloaded / 2**20:.1f} MB fetched in {r.seconds:.1f} s) in "
                     f"`{redact_paths(str(r.folder))}`.")
    return ("  \n".join(lines),)


def bind_download(trigger, inputs: list, status: gr.components.Component, to_request: Callable[..., DownloadRequest],
                  **kwargs):
    """``trigger`` runs the download action for ``to_request(*inputs)``, streaming into ``status``; returns the
    dependency. Downloads wait on the network, not the device: a queue of their own, never behind generation."""
    kwargs.setdefault("concurrency_id", "download")
    return bind_action(DOWNLOAD, trigger=trigger, inputs=inputs, outputs=[status], status=status, preview=status,
                       to_preview=progress_text, to_request=to_request, show=ready_text, stopped=STOPPED,
                       running=lambda r: f"Downloading {', '.join(r.models())}…", **kwargs)


def stop_downloads(request: gr.Request) -> None:
    """A Stop button's click: this session's download ends at its next chunk (it says so in a toast; the status
    line is the download's own, so a late answer here can never cover what the download reported)."""
    gr.Info("Stopping…" if CANCELS.cancel(request, DOWNLOAD.name) else NOTHING_DOWNLOADING)


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

    def to_request(choice: str) -> DownloadRequest:
        """The download of what the tab's model choice still needs.

        Args:
            choice: The tab's model choice: every Hub model it needs that is not here is fetched, in order.
        """
        missing = missing_parts(choice, parts)
        if not missing:
            raise InputError(f"Everything {choice} needs is here already: nothing to download.")
        return DownloadRequest(missing[0], False, tuple(missing[1:]))

    model.change(show, inputs=model, outputs=[row, what], api_visibility="private", queue=False)
    bind_download(button.click, [model], status, to_request, api_name=f"{prefix}_download",
                  api_visibility="private").then(show, inputs=model, outputs=[row, what], api_visibility="private")
    stop.click(stop_downloads, api_visibility="private", concurrency_limit=None, show_progress="hidden")
