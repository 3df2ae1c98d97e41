"""Command line: ``iclr25-studio`` (or ``python -m app``).

  serve [--host --port --models-dir --device --ray ADDRESS --mcp]   the web app (heavy work on a Ray cluster;
                                                 every action an MCP tool)
  models list                                    the registry, with present / missing
  models check [NAME ...]                        verify the embedded defaults (or the named models)
  models download ID... | --tab TAB | --all      fetch real checkpoints from the Hugging Face Hub
  replay RUN.json --out DIR                      run any capability's run card again (same outputs)

Each capability of ``backends.CAPABILITIES`` has one subcommand for batch work (JSON in, files out): its
``backends/<capability>/cli.py``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from backends.common.errors import (
    DiskFullError,
    DownloadError,
    InputError,
    ModelCorruptError,
    ModelMissingError,
)
from backends.common.settings import configure


# Each capability of ``backends.CAPABILITIES`` has a subcommand: its ``backends/<capability>/cli.py`` has HELP,
# add_arguments(parser) and run(args) -> exit code, and imports nothing heavy at module level (torch loads
# when the subcommand runs).
def capability_commands() -> list[tuple[str, str, str]]:
    """(subcommand, help, module) for every capability, in tab order."""
    from backends import CAPABILITIES

    modules = [(name, f"backends.{name}.cli") for name in CAPABILITIES]
    return [(name, importlib.import_module(module).HELP, module) for name, module in modules]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="iclr25-studio", description="ICLR 2025 Studio: ICLR 2025 papers, hands-on.")
    parser.add_argument("--models-dir", type=Path, help="folder of real checkpoints (env ICLR25_MODELS_DIR)")
    parser.add_argument("--device", help="auto | cpu | cuda | cuda:N | mps (env ICLR25_DEVICE)")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="start the web app")
    serve.add_argument("--host", help="interface to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default 7860)")
    serve.add_argument("--models-dir", type=Path, dest="models_dir_serve", help=argparse.SUPPRESS)
    serve.add_argument("--device", dest="device_serve", help=argparse.SUPPRESS)
    serve.add_argument("--ray", metavar="ADDRESS", dest="ray_address",
                       help="run heavy actions on this Ray cluster: auto, HOST:6379 or ray://HOST:10001 "
                            "(env ICLR25_RAY_ADDRESS; default: in this process)")
    serve.add_argument("--mcp", action="store_true",
                       help="also serve every action as an MCP tool (Gradio's MCP server at /gradio_api/mcp/, "
                            "streamable HTTP; each tool's schema and docs are its request's)")

    models = sub.add_parser("models", help="list or check the models the suite knows")
    msub = models.add_subparsers(dest="models_command", required=True)
    msub.add_parser("list", help="print the registry with present / missing")
    check = msub.add_parser("check", help="verify models are present and intact (default: the embedded ones)")
    check.add_argument("names", nargs="*", help="model ids (default: every embedded default)")
    download = msub.add_parser(
        "download", help="download real checkpoints from the Hugging Face Hub (progress, Ctrl-C stops, resumes)",
        description="Fetch every file a real model's loader reads (weights included) into the models folder, "
                    "showing the licence first, checking the disk space, printing bytes, rate and time left; "
                    "run it again to resume. Gated models (SD3, DeepFloyd IF) need their licence accepted on "
                    "huggingface.co and `hf auth login` first.")
    download.add_argument("names", nargs="*", metavar="ID", help="model ids (see `models list`)")
    download.add_argument("--tab", choices=_tabs(), help="every real model of one tab")
    download.add_argument("--all", action="store_true", help="every real model the suite knows")
    download.add_argument("--fp16", action="store_true",
                          help="the fp16 weight files where the repo publishes them (half the download, for a GPU)")

    replay = sub.add_parser("replay", help="run a run card (any tab's run.json) again: the same outputs into --out",
                            description="Reads the action and its request from a run.json that a tab, the API or "
                                        "a CLI command wrote (its input files beside it under inputs/) and runs "
                                        "it again with the same models and settings.")
    replay.add_argument("card", type=Path, help="the run.json of a run")
    replay.add_argument("--out", type=Path, required=True, help="output folder")

    for name, help_text, module in capability_commands():
        cap = sub.add_parser(name, help=help_text)
        cap.set_defaults(capability_module=module)
        importlib.import_module(module).add_arguments(cap)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    models_dir = getattr(args, "models_dir_serve", None) or args.models_dir
    device = getattr(args, "device_serve", None) or args.device
    try:
        configure(models_dir=models_dir, device=device, host=getattr(args, "host", None),
                  port=getattr(args, "port", None), ray_address=getattr(args, "ray_address", None))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        if args.command == "serve":
            return _serve(mcp=args.mcp)
        if args.command == "replay":
            return _replay(args.card, args.out)
        if args.command == "models":
            if args.models_command == "download":
                return _models_download(args.names, args.tab, args.all, args.fp16)
            return _models_list() if args.models_command == "list" else _models_check(args.names)
        if getattr(args, "capability_module", None):
            return importlib.import_module(args.capability_module).run(args)
    except (InputError, ModelMissingError, ModelCorruptError, DiskFullError, DownloadError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 2


def _serve(mcp: bool = False) -> int:
    from app.main import build_app, launch
    from backends.common.settings import get_settings

    if get_settings().ray_address:
        from backends.common.ray_executor import use_ray

        use_ray(get_settings().ray_address)  # before the app is built: the "gpu" queue takes the cluster's GPUs
    demo = build_app()
    launch(demo, mcp_server=mcp)
    return 0


def _replay(card: Path, out: Path) -> int:
    from backends.common.action_cli import print_line, replay_card

    result, paths = replay_card(card, out)
    print_line(card=card.name, out=out, files=sorted(paths))
    return 0


def _models_list() -> int:
    from backends.common.registry import STATUS_HEADERS, status_table

    rows = status_table()
    shown = STATUS_HEADERS[:6]
    table = [shown] + [[("" if v is None else str(v)) for v in row[:6]] for row in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(shown))]
    for i, row in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    present = sum(1 for r in rows if r[4] == "yes")
    print(f"\n{present} of {len(rows)} models present.")
    return 0


def _models_check(names: list[str]) -> int:
    from backends.common.registry import absent_word, default_registry, model_status
    from backends.common.settings import get_settings

    registry = default_registry()
    specs = [registry.get(n) for n in names] if names else registry.defaults()
    failed = 0
    for spec in specs:
        st = model_status(spec)
        if st.present and spec.source == "hf":
            st = _check_published(spec, st)
        if st.present:
            print(f"ok       {spec.id}  ({st.path})")
            continue
        failed += 1
        what = absent_word(st.problem)
        print(f"{what:8} {spec.id}: {'not found' if what == 'missing' else st.problem}", file=sys.stderr)
        for place in st.searched:
            print(f"           looked in {place}", file=sys.stderr)
        print(f"           how to get it: {spec.instructions(get_settings())}", file=sys.stderr)
    if not specs:
        print("no embedded models are registered yet; nothing to check.")
    elif not failed:
        print(f"all {len(specs)} model(s) present and intact.")
    return 1 if failed else 0


def _check_published(spec, st):
    """A downloaded model against the sha256 the hub published for its weights (recorded at download time)."""
    from backends.common.download import verify_download

    problems = verify_download(st.path)
    if problems is None:
        print(f"note     {spec.id}: no published checksums recorded (not fetched by `models download`); "
              "only presence was checked.")
        return st
    if problems:
        st.present, st.problem = False, "; ".join(problems) + f" — delete those files and run " \
                                                              f"`iclr25-studio models download {spec.id}` again"
    return st


def _tabs() -> list[str]:
    from backends import CAPABILITIES

    return list(CAPABILITIES)


def _models_download(names: list[str], tab: str | None, every: bool, fp16: bool = False) -> int:
    """``models download``: one model after another, a progress line a second, Ctrl-C stops (run again to resume)."""
    import time

    from backends.common.download import download
    from backends.common.errors import Cancelled
    from backends.common.progress import CancelToken, ProgressEvent
    from backends.common.registry import default_registry
    from backends.common.settings import get_settings

    registry = default_registry()
    if every or tab:
        specs = [s for s in registry if (every or s.capability == tab) and s.source == "hf"]
        others = [s for s in registry if (every or s.capability == tab) and s.source == "local"]
    else:
        specs = [registry.get(n) for n in names]
        others = [s for s in specs if s.source != "hf"]
        specs = [s for s in specs if s.source == "hf"]
    if not specs and not others:
        print("error: name models to download (see `models list`), or use --tab TAB or --all", file=sys.stderr)
        return 2
    for spec in others:
        print(f"skip     {spec.id}: not on the Hugging Face Hub; {spec.instructions(get_settings())}")
    failed = 0
    for spec in specs:
        token, last = CancelToken(), 0.0
        variant = "fp16" if fp16 and spec.fp16_files else None
        if fp16 and not variant:
            print(f"note     {spec.id}: its repo publishes no fp16 weights; fetching the full ones.")
        try:
            for item in download(spec, token, variant=variant):
                if isinstance(item, ProgressEvent):
                    if item.preview is None or time.monotonic() - last >= 1.0 or item.fraction >= 1.0:
                        print(item.message, file=sys.stderr if item.preview is not None else sys.stdout, flush=True)
                        last = time.monotonic()
                else:
                    print(f"ok       {spec.id}: {len(item.files)} files in {item.folder} "
                          f"({item.bytes_downloaded / 2**20:.1f} MB fetched in {item.seconds:.1f} s)")
        except DownloadError as e:
            failed += 1
            print(f"error: {e}", file=sys.stderr)
        except (KeyboardInterrupt, Cancelled):
            token.cancel()
            print(f"stopped  {spec.id}: what was downloaded is kept; run the same command again to resume.",
                  file=sys.stderr)
            return 130
    return 1 if failed else 0
