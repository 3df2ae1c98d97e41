"""System tab: the device in use, library versions, the model registry, the queue, a device speed test."""

from __future__ import annotations

from dataclasses import asdict

import gradio as gr

from app.components.errors import user_errors
from app.components.longwork import CANCELS, stream
from app.components.queue_state import queue_state
from app.tabs import TabSpec
from backends.common.device import device_report
from backends.common.errors import Cancelled
from backends.common.redact import redact_paths
from backends.common.registry import STATUS_HEADERS, status_table
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

    with gr.Accordion("Measure device speed (matrix multiply)", open=False):
        with gr.Row():
            size = gr.Slider(64, 4096, value=512, step=64, label="Matrix size", elem_id="speed-size")
            repeats = gr.Slider(1, 200, value=10, step=1, label="Repeats", elem_id="speed-repeats")
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


TAB = TabSpec(name="system", title="System", build=build)


def _models_table() -> list[list]:
    """The registry, with the places looked in written relative to known folders (no server paths)."""
    return [[*row[:-1], redact_paths(row[-1])] for row in status_table()]
