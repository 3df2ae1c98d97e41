"""System tab: the device in use, library versions, the model registry, the queue, a device speed test."""

from __future__ import annotations

from dataclasses import asdict
from types import SimpleNamespace

import gradio as gr

from app.components.action_button import bind_action, bind_stop
from app.components.errors import user_errors
from app.components.model_download import bind_download, downloadable
from app.components.params import control
from app.components.queue_state import queue_state
from app.tabs import TabSpec
from backends.common.device import device_report
from backends.common.params import field_spec
from backends.common.redact import redact_paths
from backends.common.registry import STATUS_HEADERS, default_registry, model_status, status_table
from backends.common.settings import get_settings
from backends.common.speedtest import SpeedTestRequest
from backends.common.sysinfo import library_versions, platform_summary
from backends.common.system_actions import DOWNLOAD, SPEED_TEST, DownloadRequest


def system_info() -> dict:
    """Device, versions and where models are looked for (the API's `/system_info`)."""
    settings = get_settings()
    report = device_report()
    return {
        "device": asdict(report),
        "device_summary": report.summary(),
        "platform": platform_summary(),
        "versions": library_versions(),
        "settings": {
            "device": settings.device,
            "dtype": settings.dtype,
            "models_dir": redact_paths(str(settings.models_dir)),
            "assets_dir": redact_paths(str(settings.assets_dir)),
            "offline": settings.offline,
        },
    }


def device_markdown(info: dict) -> str:
    d = info["device"]
    lines = [
        f"**Device in use:** `{d['selected']}` ({d['dtype']})",
        f"**CPU:** {d['cpu_name']} · {d['cpu_count']} cores · torch threads {d['torch_threads']}"
        + (f" · RAM {d['ram_total_gb']:.0f} GB" if d["ram_total_gb"] else ""),
        f"**CUDA:** {'yes' if d['cuda_available'] else 'no'} · **MPS:** {'yes' if d['mps_available'] else 'no'}",
    ]
    for a in d["accelerators"]:
        free = f", {a['free_memory_gb']:.1f} GB free" if a["free_memory_gb"] is not None else ""
        lines.append(f"**GPU {a['index']}:** {a['name']} · {a['total_memory_gb']:.1f} GB{free}")
    lines.append(f"**Platform:** {info['platform']}")
    s = info["settings"]
    lines.append(f"**Models folder:** `{s['models_dir']}` · **offline:** {s['offline']}")
    return "  \n".join(lines)


def versions_rows(info: dict) -> list[list[str]]:
    return [[k, v] for k, v in info["versions"].items()]


def _overview() -> SimpleNamespace:
    """The device, the versions, the model registry and the queue."""
    gr.Markdown("Where the suite runs and what it can load. Everything here is read live from this machine.")
    with gr.Row():
        device_md = gr.Markdown(elem_id="system-device")
        versions = gr.Dataframe(headers=["library", "version"], label="Versions", interactive=False,
                                elem_id="system-versions")
    models = gr.Dataframe(headers=STATUS_HEADERS, label="Model registry", interactive=False, wrap=True,
                          elem_id="system-models")
    with gr.Row():
        refresh = gr.Button("Refresh", variant="secondary")
        queue_json = gr.JSON(label="Queue", elem_id="system-queue")
    return SimpleNamespace(device_md=device_md, versions=versions, models=models, refresh=refresh, queue=queue_json)


def _downloads(models: gr.Dataframe) -> SimpleNamespace:
    """A *Download* for the chosen model and one beside each missing model of the registry."""
    with gr.Accordion("Download the papers' models", open=True, elem_id="system-downloads"):
        gr.Markdown("Each missing model that is on the Hugging Face Hub has a *Download* button: its licence is "
                    "shown first, the disk space is checked before it starts, Stop keeps the files that arrived whole "
                    "and the next Download fetches the rest. Gated models need their licence accepted on huggingface.co and "
                    "`hf auth login` on this machine first.")
        with gr.Row():
            model_id = field_spec(DownloadRequest, "model_id")  # its choices are the registry's Hub models
            choice = gr.Dropdown(choices=downloadable(), label=model_id.label, info=model_id.param.help, scale=3,
                                 elem_id="download-choice")
            fp16 = control(DownloadRequest, "fp16", elem_id="download-fp16")
            button = gr.Button("Download", variant="primary", elem_id="download-run")
            stop = gr.Button("Stop", variant="stop", elem_id="download-stop")
        status = gr.Markdown(elem_id="download-status")

        @gr.render(triggers=[models.change])
        def missing_rows():
            for spec_id, line in _missing_downloadable():
                with gr.Row(elem_classes="download-row"):
                    gr.Markdown(line, elem_classes="download-row-text")
                    row_button = gr.Button("Download", size="sm", elem_id=f"download-{spec_id}", scale=0)
                bind_download(row_button.click, [fp16], status, _row_request(spec_id), api_name=f"download_{spec_id}",
                              api_visibility="private").then(models_table, outputs=models)

    return SimpleNamespace(choice=choice, fp16=fp16, button=button, stop=stop, status=status)


def _speed() -> SimpleNamespace:
    with gr.Accordion("Measure device speed (matrix multiply)", open=False):
        with gr.Row():
            size = control(SpeedTestRequest, "size", elem_id="speed-size")
            repeats = control(SpeedTestRequest, "repeats", elem_id="speed-repeats")
        with gr.Row():
            run = gr.Button("Run speed test", variant="primary", elem_id="speed-run")
            stop = gr.Button("Stop", variant="stop", elem_id="speed-stop")
        result = gr.Markdown(elem_id="speed-result")
    # the session's last measurement (the run card's numbers); also gives the action's event a second output,
    # since bind_action yields tuples, which a lone output would take whole
    last = gr.State(None)
    return SimpleNamespace(size=size, repeats=repeats, run=run, stop=stop, result=result, last=last)


@user_errors
def models_table() -> list[list]:
    return _models_table()


def download_request(model_id: str, fp16: bool) -> DownloadRequest:
    """The API's `/download_model`: the licence, then progress lines, then where the model is."""
    return DownloadRequest(model_id, fp16)


def _row_request(model_id: str):
    def row_request(fp16: bool) -> DownloadRequest:
        return DownloadRequest(model_id, fp16)

    return row_request


def speed_request(size: int, repeats: int) -> SpeedTestRequest:
    return SpeedTestRequest(size, repeats)


def _speed_text(request: SpeedTestRequest, value, paths) -> tuple[str, dict]:
    return (f"**{value.gflops:.1f} GFLOP/s** on `{value.device}` ({value.dtype}): "
            f"{value.repeats} × {value.size}² matmul in {value.seconds:.3f} s", asdict(value))


def _wire(demo: gr.Blocks, view: SimpleNamespace, downloads: SimpleNamespace, speed: SimpleNamespace) -> None:
    @user_errors
    def load_system():
        info = system_info()
        return device_markdown(info), versions_rows(info), _models_table(), queue_state(demo)

    def queue_status() -> dict:
        return queue_state(demo)

    overview = [view.device_md, view.versions, view.models, view.queue]
    gr.api(system_info, api_name="system_info")
    demo.load(load_system, outputs=overview, api_visibility="private")
    view.refresh.click(load_system, outputs=overview, api_name="refresh_system")
    gr.api(models_table, api_name="models")
    gr.api(queue_status, api_name="queue_status")
    # the speed test is an action on the shared "gpu" queue; Stop sets the session's cancel token, which the
    # backend checks between steps (Gradio's own `cancels=` could only stop the generator between its yields)
    bind_action(SPEED_TEST, trigger=speed.run.click, inputs=[speed.size, speed.repeats], outputs=[speed.last],
                status=speed.result, to_request=speed_request, show=_speed_text, stopped="Stopped by the user.")
    bind_stop(speed.stop, SPEED_TEST, speed.result, api_name="stop_speed_test")
    # a download is the same action wherever its button is (also beside each tab's model choice): the licence
    # and progress in the status line, on a queue of its own (it waits on the network, not the device)
    bind_download(downloads.button.click, [downloads.choice, downloads.fp16], downloads.status, download_request,
                  api_name="download_model").then(models_table, outputs=view.models)
    bind_stop(downloads.stop, DOWNLOAD, downloads.status, api_name="stop_download")


def build(demo: gr.Blocks) -> None:
    view = _overview()
    downloads = _downloads(view.models)
    speed = _speed()
    _wire(demo, view, downloads, speed)


TAB = TabSpec(name="system", title="System", build=build)


def _models_table() -> list[list]:
    """The registry, with the places looked in written relative to known folders (no server paths)."""
    return [[*row[:-1], redact_paths(row[-1])] for row in status_table()]


def _missing_downloadable() -> list[tuple[str, str]]:
    """(id, a line naming it, its tab and licence) for each Hub model that is not present."""
    rows = []
    for spec in default_registry():
        if spec.source == "hf" and not model_status(spec).present:
            rows.append((spec.id, f"**{spec.id}** · {spec.capability} · {len(spec.files)} files from "
                                  f"`{spec.location}` · licence: {spec.license}"))
    return rows
