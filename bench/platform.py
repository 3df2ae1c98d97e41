"""The suite as a platform, measured: named API parameters, single-source actions, MCP tools, the wheel, the test
suite's time and wall-clock assertions, and the cold start against a bare ``gr.Blocks`` (side by side, one run).

    python -m bench.platform [--quick] [--make-test-seconds N | --make-test-log LOG] [--skip-wheel]

``make_test_seconds`` comes from a fresh-clone run (``../shared/tools/fresh-clone-test``, whose last line says
"make test exited 0 after N s"): pass its log or the number; without either, the last recorded value
(``bench/results/make_test.json``) is used and said so. The quick mode takes 5 cold-start samples of each app
instead of 7 (the issue's minimum is 5) and reuses the wheel check's last result when it is younger than a day.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.report import RESULTS, markdown_table

ROOT = Path(__file__).resolve().parents[1]
KEYS = ("unnamed_api_parameters", "actions_total", "actions_with_single_source", "mcp_tools",
        "wheel_serves_all_tabs", "make_test_seconds", "timing_assertions_in_tests", "cold_start_ratio")


def api_and_mcp() -> dict:
    """Start the app with its MCP server; count unnamed API parameters, single-source actions and MCP tools."""
    import socket

    from app.cli import build_parser
    from app.contract import check_actions, undocumented_parameters, unnamed_parameters
    from app.main import build_app, launch

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    demo = build_app()
    _, url, _ = launch(demo, server_port=port, prevent_thread_lock=True, quiet=True, mcp_server=True)
    try:
        from gradio_client import Client

        info = Client(url, verbose=False).view_api(print_info=False, return_format="dict")
        checks = check_actions(demo, build_parser())
        tools = asyncio.run(_mcp_tools(url.rstrip("/") + "/gradio_api/mcp/"))
    finally:
        demo.close()
    return {"endpoints": len(info["named_endpoints"]), "unnamed": unnamed_parameters(info),
            "undocumented": undocumented_parameters(info), "checks": checks, "tools": tools}


async def _mcp_tools(url: str) -> list[str]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        return [t.name for t in (await session.list_tools()).tools]


def cold_start(samples: int) -> dict:
    """Median seconds to the first HTTP 200 of the whole app and of a bare ``gr.Blocks``, interleaved."""
    from bench.startup import BARE, SUITE, time_to_first_200

    time_to_first_200(BARE), time_to_first_200(SUITE)  # warm the page cache for both
    bare, suite = [], []
    for _ in range(samples):
        bare.append(time_to_first_200(BARE))
        suite.append(time_to_first_200(SUITE))
    return {"bare_s": bare, "suite_s": suite, "ratio": statistics.median(suite) / statistics.median(bare)}


def wheel(reuse: bool) -> dict:
    path = RESULTS / "wheel.json"
    if reuse and path.is_file() and time.time() - path.stat().st_mtime < 86400:
        found = json.loads(path.read_text())
        return {**found, "reused": True}
    subprocess.run([sys.executable, "-m", "bench.wheel_check"], cwd=ROOT, check=False)
    return {**json.loads(path.read_text()), "reused": False} if path.is_file() else {"wheel_serves_all_tabs": False}


def make_test_seconds(seconds: float | None, log: Path | None) -> tuple[float | None, str]:
    record = RESULTS / "make_test.json"
    if log is not None:
        found = re.findall(r"make test exited (\d+) after (\d+) s", Path(log).read_text())
        if not found:
            raise SystemExit(f"{log} has no 'make test exited … after N s' line")
        rc, seconds = int(found[-1][0]), float(found[-1][1])
        if rc != 0:
            raise SystemExit(f"that fresh-clone make test failed (exit {rc}); a failing run has no time")
    if seconds is not None:
        record.write_text(json.dumps({"make_test_seconds": seconds, "when": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n")
        return seconds, "given"
    if record.is_file():
        found = json.loads(record.read_text())
        return found["make_test_seconds"], f"recorded {found['when']}"
    return None, "never measured"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--make-test-seconds", type=float)
    p.add_argument("--make-test-log", type=Path)
    p.add_argument("--skip-wheel", action="store_true", help="reuse the last wheel check whatever its age")
    args = p.parse_args(argv)

    from bench.timing_audit import timing_assertions

    seconds, seconds_from = make_test_seconds(args.make_test_seconds, args.make_test_log)
    timed = timing_assertions()
    api = api_and_mcp()
    wheel_result = wheel(reuse=args.quick or args.skip_wheel)
    start = cold_start(5 if args.quick else 7)
    checks = api["checks"]
    single = [c for c in checks if c.single_source]
    payload = {
        "unnamed_api_parameters": len(api["unnamed"]),
        "actions_total": len(checks),
        "actions_with_single_source": len(single),
        "mcp_tools": len(api["tools"]),
        "wheel_serves_all_tabs": bool(wheel_result.get("wheel_serves_all_tabs")),
        "make_test_seconds": seconds,
        "timing_assertions_in_tests": len(timed),
        "cold_start_ratio": round(start["ratio"], 3),
    }
    print(markdown_table(["measure", "value", "goal / detail"], [
        ["unnamed API parameters", payload["unnamed_api_parameters"], f"0 (over {api['endpoints']} named endpoints)"],
        ["actions with a single source", f"{len(single)} / {len(checks)}", "all"],
        ["MCP tools", payload["mcp_tools"], "every action"],
        ["wheel serves all tabs", payload["wheel_serves_all_tabs"],
         "reused last check" if wheel_result.get("reused") else "checked now"],
        ["make test (fresh clone, s)", seconds, f"≤ 1500 ({seconds_from})"],
        ["wall-clock assertions in tests", len(timed), "0"],
        ["cold start ratio (suite / bare)", payload["cold_start_ratio"],
         f"≤ 1.5; medians {statistics.median(start['suite_s']):.2f} s / {statistics.median(start['bare_s']):.2f} s, "
         f"{len(start['suite_s'])} starts each"],
    ]))
    for c in checks:
        if not c.single_source:
            reason = c.problems[:3] if c.problems else "not bound in a tab" if c.bound == 0 else "declares no field"
            print(f"  not single-source: {c.action}: {reason}")
    for line in api["unnamed"][:10] + timed[:10]:
        print(f"  {line}")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "platform.json"  # exactly the keys, at top level
    path.write_text(json.dumps(payload, indent=2) + "\n")
    details = RESULTS / "platform-details.json"
    from backends.common.redact import redact_paths

    details.write_text(redact_paths(json.dumps({
        "named_endpoints": api["endpoints"], "unnamed": api["unnamed"], "undocumented": api["undocumented"],
        "not_single_source": {c.action: c.problems for c in checks if not c.single_source},
        "mcp_tools": api["tools"], "timing_assertions": timed, "cold_start": start, "wheel": wheel_result,
        "make_test_seconds_from": seconds_from}, indent=1)) + "\n")
    print(f"wrote {path.relative_to(ROOT)} and {details.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
