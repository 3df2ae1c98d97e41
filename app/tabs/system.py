"""System tab: the device in use, library versions, the model registry, the queue, a device speed test."""

from __future__ import annotations

from dataclasses import asdict

import gradio as gr

from app.components.errors import user_errors
from app.components.longwork import CANCELS, stream
from app.components.model_download import download_stream, downloadable
from app.components.queue_state import queue_state
from app.tabs import TabSpec
from backends.common.device import device_report
from backends.common.errors import Cancelled
from backends.common.redact import redact_paths
from backends.common.registry import STATUS_HEADERS, default_registry, model_status, status_table
from backends.common.settings import get_settings
from backends.common.speedtest import SpeedTestRequest, run_speed_test
from backends.common.sysinfo import library_versions, platform_summary


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


def build(demo: gr.Blocks) -> None:
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

    with gr.Accordion("Download the papers' models", open=True, elem_id="system-downloads"):
        gr.Markdown("Each missing model that is on the Hugging Face Hub has a *Download* button: its licence is "
                    "shown first, the disk space is checked before it starts, Stop keeps what has arrived and the "
                    "next Download resumes it. Gated models need their licence accepted on huggingface.co and "
                    "`hf auth login` on this machine first.")
        with gr.Row():
            download_choice = gr.Dropdown(choices=downloadable(), label="Model", scale=3,
                                          elem_id="download-choice",
                                          info="A model of the registry that can be fetched from the Hugging Face Hub.")
            download_fp16 = gr.Checkbox(False, label="fp16 weights", elem_id="download-fp16",
                                        info="Where the repo publishes them: half the download, for a GPU.")
            download_btn = gr.Button("Download", variant="primary", elem_id="download-run")
            download_stop = gr.Button("Stop", variant="stop", elem_id="download-stop")
        download_md = gr.Markdown(elem_id="download-status")

        @gr.render(triggers=[models.change])
        def missing_rows():
            for spec_id, line in _missing_downloadable():
                with gr.Row(elem_classes="download-row"):
                    gr.Markdown(line, elem_classes="download-row-text")
                    button = gr.Button("Download", size="sm", elem_id=f"download-{spec_id}", scale=0)
                button.click(_row_download(spec_id), inputs=download_fp16, outputs=download_md,
                             api_visibility="private",
                             concurrency_id="download").then(models_table, outputs=models)

    with gr.Accordion("Measure device speed (matrix multiply)", open=False):
        with gr.Row():
            size = gr.Slider(64, 4096, value=512, step=64, label="Matrix size", elem_id="speed-size",
                             info="Side of the square matrices multiplied: larger measures sustained speed.")
            repeats = gr.Slider(1, 200, value=10, step=1, label="Repeats", elem_id="speed-repeats",
                                info="Multiplications timed; the speed is their average.")
        with gr.Row():
            run = gr.Button("Run speed test", variant="primary", elem_id="speed-run")
            stop = gr.Button("Stop", variant="stop", elem_id="speed-stop")
        speed_md = gr.Markdown(elem_id="speed-result")

    @user_errors
    def load_system():
        info = system_info()
        return device_markdown(info), versions_rows(info), _models_table(), queue_state(demo)

    @user_errors
    def models_table() -> list[list]:
        return _models_table()

    def queue_status() -> dict:
        return queue_state(demo)

    @user_errors
    def speed_test(size: float, repeats: float, request: gr.Request, progress=gr.Progress()):
        req = SpeedTestRequest(size=int(size), repeats=int(repeats))
        token = CANCELS.start(request, "speed_test")
        try:
            yield "Running…"
            for kind, value in stream(run_speed_test(req, token), progress):
                if kind == "result":
                    yield (f"**{value.gflops:.1f} GFLOP/s** on `{value.device}` ({value.dtype}): "
                           f"{value.repeats} × {value.size}² matmul in {value.seconds:.3f} s")
        except Cancelled:
            yield "Stopped by the user."
        finally:
            CANCELS.finish(request, "speed_test", token)

    @user_errors
    def download_model(model_id: str, fp16: bool, request: gr.Request, progress=gr.Progress()):
        """Download one model (the API's `/download_model`): the licence, then progress lines, then where it is."""
        yield from download_stream(model_id, fp16, request, progress)

    def _row_download(model_id: str):
        @user_errors
        def download_row(fp16: bool, request: gr.Request, progress=gr.Progress()):
            yield from download_stream(model_id, fp16, request, progress)

        return download_row

    def stop_download(request: gr.Request) -> str:
        return "Stopping…" if CANCELS.cancel(request, "download") else "Nothing is downloading."

    def stop_speed_test(request: gr.Request) -> str:
        return "Stopping…" if CANCELS.cancel(request, "speed_test") else "Nothing is running."

    gr.api(system_info, api_name="system_info")
    demo.load(load_system, outputs=[device_md, versions, models, queue_json], api_visibility="private")
    refresh.click(load_system, outputs=[device_md, versions, models, queue_json], api_name="refresh_system")
    gr.api(models_table, api_name="models")
    gr.api(queue_status, api_name="queue_status")
    # Stop sets the session's cancel token, which the backend checks between steps (Gradio's own
    # `cancels=` could only stop the generator between two of its yields).
    run.click(speed_test, inputs=[size, repeats], outputs=speed_md, api_name="speed_test", concurrency_id="gpu")
    stop.click(stop_speed_test, outputs=speed_md, api_name="stop_speed_test", queue=False)
    # Downloads wait on the network, not the device: their own queue, never behind generation.
    download_btn.click(download_model, inputs=[download_choice, download_fp16], outputs=download_md,
                       api_name="download_model",
                       concurrency_id="download").then(models_table, outputs=models)
    download_stop.click(stop_download, outputs=download_md, api_name="stop_download", queue=False)


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
