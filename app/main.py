"""Build and launch the app: one gr.Tab per capability, the shared queue, and safe launch defaults."""

from __future__ import annotations

import os
from pathlib import Path

# Set before gradio is imported: no analytics, no version check, nothing leaves the machine.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

from app.components import server_check  # noqa: E402
from app.components.blocks import StudioBlocks  # noqa: E402
from app.components.longwork import end_session  # noqa: E402
from app.components.typed_values import keep_typed_values, typed_controls  # noqa: E402
from app.components.warmup import PRELOAD  # noqa: E402
from app.tabs import all_tabs, grouped  # noqa: E402
from backends.common.executor import current_executor  # noqa: E402
from backends.common.memory import limit_arenas, start_trimming  # noqa: E402
from backends.common.modelbuild import preload, start_preload  # noqa: E402
from backends.common.settings import Settings, get_settings  # noqa: E402

STATIC_DIR = Path(__file__).parent / "static"
TITLE = "ICLR 2025 Studio"

NUMBERS = ("No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten", "Eleven", "Twelve",
           "Thirteen", "Fourteen", "Fifteen", "Sixteen", "Seventeen", "Eighteen", "Nineteen")


def header(tabs) -> str:
    """Says what exists: one paper per registered capability tab (the System tab is no paper)."""
    papers = [t.title for t in tabs if t.name != "system"]
    count = NUMBERS[len(papers)] if len(papers) < len(NUMBERS) else str(len(papers))
    return (f"# {TITLE}\n{count} ICLR 2025 paper{'s' if len(papers) != 1 else ''}, hands-on "
            f"({', '.join(papers)}): each tab is one paper's method, running for real on this machine.")


def group_id(group: str) -> str:
    """A group's tab id (and ``elem_id`` suffix): "Images & 3D" → "images-3d"."""
    return "-".join("".join(c if c.isalnum() else " " for c in group.lower()).split())


def build_app(settings: Settings | None = None) -> gr.Blocks:
    """The whole app. Nothing heavy happens here: models load on first use, never at build time."""
    settings = settings or get_settings()
    with StudioBlocks(title=TITLE, delete_cache=(3600, 3600)) as demo:
        tabs = all_tabs()
        with gr.Row():
            gr.Markdown(header(tabs), elem_id="app-header")
            device_badge = gr.Markdown(elem_id="app-device")
        inner: dict[str, gr.Tabs] = {}
        with gr.Tabs(elem_id="groups") as outer:
            for group, members in grouped(tabs):
                with gr.Tab(group, id=group_id(group), elem_id=f"group-{group_id(group)}"):
                    with gr.Tabs(elem_id=f"tabs-{group_id(group)}") as inner[group]:
                        for tab in members:
                            with gr.Tab(tab.title, id=tab.name, elem_id=f"tab-{tab.name}"):
                                tab.build(demo)
            for tab in tabs:
                if tab.name == "system":
                    with gr.Tab(tab.title, id=tab.name, elem_id=f"tab-{tab.name}"):
                        tab.build(demo)
        keep_typed_values(demo, typed_controls(demo))  # after every tab's own load handlers are registered
        demo.load(_device_badge, outputs=device_badge, api_visibility="private")
        demo.load(deep_link(tabs), outputs=[outer, *inner.values()], api_visibility="private", queue=False,
                  show_progress="hidden")
        demo.unload(end_session)  # a closed page or a client gone: its running jobs stop
    _name_tools_as_endpoints(demo)
    demo.queue(max_size=settings.queue_max_size, default_concurrency_limit=2)
    _limit_gpu_queue(demo, getattr(current_executor(), "concurrency", None) or settings.gpu_concurrency)
    return demo


def _name_tools_as_endpoints(demo: gr.Blocks) -> None:
    """Gradio's MCP server names a tool after its handler's ``__name__``; a tool is named as its API endpoint
    instead (``counterfactual_generate``, not ``on_counterfactual_generate``), so MCP, the API and the run card
    say one name."""
    for fn in demo.fns.values():
        if fn.fn is not None and fn.api_name and fn.api_visibility == "public":
            try:
                fn.fn.__name__ = fn.api_name
            except (AttributeError, TypeError):  # a bound method or a builtin keeps its own
                pass


def deep_link(tabs):
    """``?tab=<name>`` opens that tab (its group first): the handler of the page's load event."""
    groups = grouped(tabs)

    def open_tab(request: gr.Request):
        wanted = (dict(request.query_params) if request is not None else {}).get("tab", "")
        updates = [gr.update()] * (1 + len(groups))
        if wanted == "system":
            updates[0] = gr.Tabs(selected="system")
        for i, (group, members) in enumerate(groups):
            if wanted in (group_id(group), *(t.name for t in members)):
                updates[0] = gr.Tabs(selected=group_id(group))
                if wanted != group_id(group):
                    updates[1 + i] = gr.Tabs(selected=wanted)
        return tuple(updates)

    return open_tab


def _device_badge() -> str:
    from backends.common.device import device_report

    where = current_executor().where()
    if where:  # served with --ray: the tabs' models run on the cluster, not on this machine's device
        return f"**Device:** {where}"
    report = device_report()
    return f"**Device:** `{report.selected}` ({report.dtype}) · {report.summary().split(' · ', 1)[1]}"


def _limit_gpu_queue(demo: gr.Blocks, limit: int) -> None:
    """Every heavy listener shares one queue (`concurrency_id="gpu"`) with the configured limit (on Ray: the
    cluster's GPUs, at least 1)."""
    for fn in demo.fns.values():
        if fn.concurrency_id == "gpu":
            fn.concurrency_limit = limit


def launch(demo: gr.Blocks, settings: Settings | None = None, **kwargs):
    """Launch with the suite's safe defaults: loopback, upload cap, no file access beyond the cache."""
    settings = settings or get_settings()
    options = dict(
        server_name=settings.host,
        server_port=settings.port,
        max_file_size=f"{settings.max_file_size_mb}mb",
        allowed_paths=[],
        show_error=True,
        footer_links=["api", "settings"],
        css_paths=[STATIC_DIR / "app.css"],
        theme=gr.themes.Soft(),
    )
    options.update(kwargs)
    # worker threads' freed tensors go back to the system instead of piling up in per-thread heaps
    limit_arenas(2)
    start_trimming()
    # what a killed server left (partial files, stale locks, old outputs) goes now and then on a schedule;
    # stopped or interrupted runs stay resumable (app.components.downloads, backends.common.runs)
    from app.components.downloads import start_cleanup

    start_cleanup()
    server_check.install()
    if options.get("mcp_server"):
        from app.components.mcp_state import install

        install()
    if options.pop("prevent_thread_lock", False):
        # the caller goes on in this process (tests, benches): everything is imported first, on this thread, so
        # nothing it does next can import beside the preload
        preload(PRELOAD)
        return demo.launch(**options, prevent_thread_lock=True)
    out = demo.launch(**options, prevent_thread_lock=True)
    # torch, diffusers, transformers and the backends are imported once, on one thread, once the page is
    # served (not before: the first page comes sooner); a handler that runs first imports them itself under the
    # same lock (app.components.warmup), so no two threads import them for the first time
    start_preload(PRELOAD)
    demo.block_thread()
    return out
