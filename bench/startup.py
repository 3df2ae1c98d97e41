"""Cold start of the suite vs a bare ``gr.Blocks()`` app, measured side by side in one run.

Each sample starts a fresh Python process, launches the app on a free loopback port and times until
the first HTTP 200 on ``/``. Also reports the installed environment's size. No user action runs: this is
the app's start alone.

    python -m bench.startup [--quick]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from bench.report import markdown_table, write_results

ROOT = Path(__file__).resolve().parents[1]
GOAL = 1.5  # issue 39: the app with every tab within 1.5x a bare gr.Blocks

SUITE = """
from app.main import build_app, launch
launch(build_app(), server_port={port}, quiet=True)
"""
BARE = """
import gradio as gr
with gr.Blocks() as demo:
    gr.Markdown("bare")
demo.launch(server_name="127.0.0.1", server_port={port}, quiet=True)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def time_to_first_200(code: str, timeout: float = 180.0) -> float:
    port = _free_port()
    # bytecode is written and reused, as for an installed wheel (pip compiles it): with it off, every start
    # recompiled the suite's ~140 modules while Gradio's own came compiled, a cost no deployment pays
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["GRADIO_ANALYTICS_ENABLED"] = "False"
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code.format(port=port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while time.perf_counter() - start < timeout:
            if proc.poll() is not None:
                raise RuntimeError(f"app exited early: {proc.stderr.read().decode()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as r:
                    if r.status == 200:
                        return time.perf_counter() - start
            except OSError:
                time.sleep(0.05)
        raise TimeoutError(f"no HTTP 200 within {timeout} s")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def env_size_mb() -> float:
    total = 0
    for dirpath, _, files in os.walk(sys.prefix):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one sample each instead of three")
    args = parser.parse_args(argv)
    samples = 1 if args.quick else 3

    # one warm-up of each so both read a warm page cache, then interleave the samples
    time_to_first_200(BARE)
    time_to_first_200(SUITE)
    bare, suite = [], []
    for _ in range(samples):
        bare.append(time_to_first_200(BARE))
        suite.append(time_to_first_200(SUITE))
    bare_s, suite_s = statistics.median(bare), statistics.median(suite)
    ratio = suite_s / bare_s
    size = env_size_mb()

    print(markdown_table(
        ["app", "cold start to first HTTP 200 (s)", "samples"],
        [["bare gr.Blocks()", bare_s, samples], ["ICLR 2025 Studio (all tabs)", suite_s, samples]],
    ))
    print(f"\ninstalled environment: {size:.0f} MB")
    path = write_results("startup", {
        "cold_start_s": suite_s, "bare_blocks_s": bare_s, "ratio": ratio, "samples": samples,
        "suite_samples_s": suite, "bare_samples_s": bare, "env_size_mb": size, "goal_ratio_max": GOAL,
    })
    verdict = "meets" if ratio <= GOAL else "misses"
    print(f"startup: suite {suite_s:.2f} s vs bare Blocks {bare_s:.2f} s → ratio {ratio:.2f} ({verdict} the ≤ {GOAL} goal); wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
