"""Soak: N simulated users for T minutes against the real server, with one restart in the middle.

Each user is a ``gradio_client`` session of its own that, until the time is up, picks an action at
random (seeded per user): light ones — a GOPS game (new, then cards), an Avalon game (new, then its
next move), the 3D Layout box-depth preview, the system info — and heavy ones, every tab's main
action at small settings (3D Layout generate, Text in Image generate, Counterfactual generate,
Avatar reconstruct, Video Depth estimate and run). Half-way, the users pause, a Video Depth run on
a 120-frame clip is started and stopped, and the server is restarted (SIGTERM, then a fresh process
over the same models, runs and temp folders); after it, every tab's main action must work again and
the stopped run must resume by its id to a full result (``restart_recovered``); then the users go on.

Measured: errors (any failure other than a clean "busy, try again" refusal of a full queue), light
actions' latency while heavy work is in flight (p95), heavy actions' wait (submit → result, median),
the server's memory (RSS with its children) sampled every 2 s — growth from minute 2 of each server
life to its end (median of the last minute over median of the first minute after minute 2, so one
job's transient peak is not taken for growth), the larger of the two lives — and the growth of every folder the server writes
(Gradio's temp, its own outputs under TMPDIR, the runs folder), MB from the start to the end.

    python -m bench.soak [--users 12 --minutes 10] [--quick]   # quick: 4 users, 3 minutes, same mix
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.live_server import LiveServer
from bench.report import RESULTS, markdown_table
from bench.sample_requests import CF_MODELS, LAYOUT, NEUTRAL_POSE, counterfactual_editor, videodepth_settings

LIGHT_SHARE = 0.7
BUSY = ("queue is full", "too many", "busy", "try again")


@dataclass
class Inputs:
    clip: str  # a 48-frame example clip
    long_clip: str  # a 120-frame one, for the run that is stopped and resumed
    editor: dict  # the Counterfactual editor value (cube image, a drawn region)


@dataclass
class Tally:
    light: list[tuple[float, float, bool]] = field(default_factory=list)  # (seconds, when, heavy in flight)
    heavy: list[tuple[str, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    busy: int = 0
    in_flight: int = 0
    started: float = field(default_factory=time.time)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def heavy_running(self) -> bool:
        with self.lock:
            return self.in_flight > 0


def make_inputs(tmp: Path) -> Inputs:
    from backends.videodepth.examples import example_clip

    return Inputs(str(example_clip("room A · 48 frames")), str(example_clip("room C · 120 frames")),
                  counterfactual_editor(tmp))


# --- the actions ------------------------------------------------------------------------------------

def heavy_actions(inputs: Inputs):
    """name → call(client); each checks its result and raises when it is not a real one."""
    from gradio_client import handle_file

    def layout3d(c):
        out = c.predict(json.dumps(LAYOUT), "layout3d-embedded", 3, 3, 3.0, "bas", 0.9, 0.5, "multiply", False,
                        api_name="/layout3d_generate")
        assert [s["kind"] for s in out[4]["stages"]] == ["empty", "insert"], out[4]

    def textedit(c):
        out = c.predict("textedit-embedded", "a sign that says", "cat", 0, 4, api_name="/textedit_generate")
        assert "textedit-embedded" in out[3], out[3]

    def counterfactual(c):
        out = c.predict(inputs.editor, "sphere", 1, 6, 1.5, 0.6, 0, *CF_MODELS, api_name="/counterfactual_generate")
        assert len(out[3]["samples"]) == 1, out[3]

    def avatar(c):
        gallery, status, payload, _ = c.predict("synthetic", 0, 2, 1, None, None, None, *NEUTRAL_POSE,
                                                api_name="/avatar_reconstruct")
        assert json.loads(payload)["count"] > 1000, status

    def videodepth_estimate(c):
        out = c.predict(handle_file(inputs.clip), *videodepth_settings(), api_name="/videodepth_estimate")
        assert "64×64" in out, out

    def videodepth_run(c):
        out = c.predict(handle_file(inputs.clip), *videodepth_settings(), api_name="/videodepth_run")
        assert out[5] and out[5].get("frames") == 16, out[5]

    return {"layout3d": layout3d, "textedit": textedit, "counterfactual": counterfactual, "avatar": avatar,
            "videodepth_estimate": videodepth_estimate, "videodepth_run": videodepth_run}


class LightPlayer:
    """One user's light actions; a GOPS and an Avalon game carry on across calls."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.gops_cards: list[int] = []
        self.avalon_status = ""

    def gops(self, c):
        if not self.gops_cards:
            c.predict(5, "discard", "descending", "greedy", 100, self.rng.randrange(1000), api_name="/gops_new")
            self.gops_cards = list(range(1, 6))
            self.rng.shuffle(self.gops_cards)
        board, *_ = c.predict(self.gops_cards.pop(), api_name="/gops_play")
        assert "Prize" in board or "over" in board.lower(), board[:200]

    def avalon(self, c):
        s = self.avalon_status
        if "to speak" in s:
            out = c.predict("I am loyal.", api_name="/avalon_say")
        elif "Vote on" in s:
            out = c.predict(api_name="/avalon_approve")
        else:
            out = c.predict(5, "Servant", False, self.rng.randrange(1000), "rule", api_name="/avalon_new")
        self.avalon_status = out[1] if len(out) > 1 and isinstance(out[1], str) else ""
        assert out[0] is not None

    @staticmethod
    def depth(c):
        rows, depth, msg, scene = c.predict(json.dumps(LAYOUT), api_name="/layout3d_depth")
        assert depth, msg

    @staticmethod
    def system(c):
        assert c.predict(api_name="/system_info")["device"]["selected"]

    def actions(self):
        return {"gops": self.gops, "avalon": self.avalon, "layout3d_depth": self.depth, "system_info": self.system}


def is_busy(e: BaseException) -> bool:
    return any(word in str(e).lower() for word in BUSY)


def one_action(index: int, rng: random.Random, client, player: LightPlayer, heavy: dict, tally: Tally) -> None:
    """Pick a light (70 %) or heavy action, run it, and count its time or its error."""
    light = rng.random() < LIGHT_SHARE
    name = rng.choice(list(player.actions() if light else heavy))
    call = player.actions()[name] if light else heavy[name]
    if not light:
        with tally.lock:
            tally.in_flight += 1
    t0 = time.perf_counter()
    try:
        overlapped = tally.heavy_running() if light else False
        call(client)
        dt = time.perf_counter() - t0
        with tally.lock:
            if light:
                tally.light.append((dt, time.time(), overlapped or tally.in_flight > 0))
            else:
                tally.heavy.append((name, dt))
    except Exception as e:  # noqa: BLE001 — every failure is counted and reported
        with tally.lock:
            if is_busy(e):
                tally.busy += 1
            else:
                at = time.time() - tally.started  # when, to find it in the server log
                tally.errors.append(f"t={at:.0f}s user {index} {name}: {type(e).__name__}: {str(e)[:300]}")
        if name == "avalon":
            player.avalon_status = ""
        if name == "gops":
            player.gops_cards = []
    finally:
        if not light:
            with tally.lock:
                tally.in_flight -= 1


def user_loop(index: int, url_of, inputs: Inputs, tally: Tally, stop_at: float, paused: threading.Event,
              running: threading.Semaphore) -> None:
    """One simulated user until ``stop_at``; waits (holding no action) while ``paused`` is set."""
    from gradio_client import Client

    rng = random.Random(1000 + index)
    heavy = heavy_actions(inputs)
    client, life = None, None
    player = LightPlayer(rng)
    while time.time() < stop_at:
        with running:  # the coordinator takes every permit to drain in-flight actions before a restart
            if paused.is_set():
                acted = False
            else:
                acted = True
                if life != url_of():  # a new server life: a new session (its games are gone)
                    if client is not None:
                        client.close()
                    life = url_of()
                    client = Client(life[0], verbose=False, httpx_kwargs={"timeout": 600})
                    player = LightPlayer(rng)
                one_action(index, rng, client, player, heavy, tally)
        time.sleep(rng.uniform(0.2, 1.0) if acted else 0.5)  # think time
    if client is not None:
        client.close()


# --- the restart ----------------------------------------------------------------------------------

def stop_a_long_run(url: str, inputs: Inputs) -> str:
    """Start a Video Depth run on the 120-frame clip, stop it after its first windows; its run id."""
    from gradio_client import Client, handle_file

    c = Client(url, verbose=False, httpx_kwargs={"timeout": 600})
    job = c.submit(handle_file(inputs.long_clip), *videodepth_settings(max_frames=120, stride=4),
                   api_name="/videodepth_run")
    time.sleep(8)
    c.predict(api_name="/videodepth_stop")
    out = job.result(timeout=120)
    c.close()
    return run_id_of(out)


def run_id_of(outputs) -> str:
    import re

    text = json.dumps(outputs, default=str)
    found = re.findall(r"\b[0-9a-f]{12}\b", text)
    if not found:
        raise RuntimeError(f"no run id in the stopped run's outputs: {text[:400]}")
    return found[0]


def check_every_tab(url: str, inputs: Inputs) -> list[str]:
    """Each tab's main action once after the restart; the problems (empty when all work)."""
    from gradio_client import Client

    c = Client(url, verbose=False, httpx_kwargs={"timeout": 600})
    problems = []
    player = LightPlayer(random.Random(0))
    for name, call in [*heavy_actions(inputs).items(), ("gops", player.gops), ("avalon", player.avalon)]:
        try:
            call(c)
        except Exception as e:  # noqa: BLE001
            problems.append(f"{name}: {type(e).__name__}: {str(e)[:300]}")
    c.close()
    return problems


def resume_run(url: str, run_id: str) -> dict:
    from gradio_client import Client

    c = Client(url, verbose=False, httpx_kwargs={"timeout": 900})
    out = c.predict(run_id, api_name="/videodepth_resume_run")
    c.close()
    summary = out[-1] if isinstance(out, list | tuple) else out
    return summary if isinstance(summary, dict) else {"raw": str(summary)[:400]}


# --- the run --------------------------------------------------------------------------------------

def folder_mb(*folders: Path) -> float:
    total = 0
    for folder in folders:
        for p in Path(folder).rglob("*"):
            try:
                if p.is_file() and not p.is_symlink():
                    total += p.stat().st_size
            except OSError:
                pass
    return total / 2**20


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


def soak(users: int, minutes: float, work: Path) -> tuple[dict, dict]:
    models, temp, tmpdir = work / "models", work / "gradio", work / "tmp"
    tmpdir.mkdir(parents=True)
    server = LiveServer(models, temp, log=work / "server.log")
    import os

    os.environ["TMPDIR"] = str(tmpdir)  # the server (a child) writes its own outputs here: measured too
    tempfile.tempdir = None
    inputs = make_inputs(work)
    start_s = [server.start()]
    t_start = time.time()
    stop_at = t_start + minutes * 60
    restart_at = t_start + minutes * 60 / 2
    lives = [(t_start, [])]  # (start time, [(t, rss)])
    temp0 = folder_mb(temp, tmpdir, models / "runs")
    tally = Tally()
    paused = threading.Event()
    running = threading.Semaphore(users)
    life = [(server.url, 0)]  # (url, server life): a restart starts a new life on the same port
    done = threading.Event()

    def sample():
        while not done.is_set():
            rss = server.rss_mb()
            if rss is not None:
                lives[-1][1].append((time.time(), rss))
            done.wait(2.0)

    threads = [threading.Thread(target=sample, daemon=True)]
    threads += [threading.Thread(target=user_loop, args=(i, lambda: life[0], inputs, tally, stop_at, paused, running),
                                 daemon=True) for i in range(users)]
    for t in threads:
        t.start()

    time.sleep(max(0.0, restart_at - time.time()))
    paused.set()
    for _ in range(users):  # wait until no user is inside an action
        running.acquire()
    recovery: dict = {}
    try:
        recovery["restart_at_s"] = round(time.time() - tally.started)
        run_id = stop_a_long_run(server.url, inputs)
        recovery["stopped_run"] = run_id
        t0 = time.perf_counter()
        server.stop()
        lives.append((time.time(), []))  # samples from here on are the new process's
        start_s.append(server.start())
        recovery["restart_s"] = round(time.perf_counter() - t0, 1)
        life[0] = (server.url, 1)
        problems = check_every_tab(server.url, inputs)
        resumed = resume_run(server.url, run_id)
        recovery.update(tab_problems=problems, resumed=resumed)
        recovered = not problems and resumed.get("frames") == 120
    except Exception as e:  # noqa: BLE001
        recovery["error"] = f"{type(e).__name__}: {str(e)[:400]}"
        recovered = False
    finally:
        for _ in range(users):
            running.release()
        paused.clear()

    for t in threads[1:]:
        t.join(timeout=minutes * 60 + 900)
    done.set()
    temp1 = folder_mb(temp, tmpdir, models / "runs")
    server.stop()

    growth, single = [], []
    for t_life, samples in lives:
        after = [(t, rss) for t, rss in samples if t >= t_life + 120]
        if len(after) >= 8:  # median of the first vs the last minute after warm-up (at most half the span each):
            span = min(60.0, (after[-1][0] - after[0][0]) / 2)  # one job's transient peak is not growth
            first = [rss for t, rss in after if t <= after[0][0] + span]
            last = [rss for t, rss in after if t >= after[-1][0] - span]
            growth.append(statistics.median(last) / statistics.median(first))
            single.append(after[-1][1] / after[0][1])
    light_busy = [dt for dt, _, overlapped in tally.light if overlapped]
    waits = [dt for _, dt in tally.heavy]
    result = {
        "users": users,
        "minutes": minutes,
        "errors": len(tally.errors),
        "light_p95_s": round(percentile(light_busy, 0.95), 3),
        "heavy_median_wait_s": round(statistics.median(waits), 2) if waits else None,
        "rss_growth_ratio": round(max(growth), 3) if growth else None,
        "temp_mb_growth": round(temp1 - temp0, 1),
        "restart_recovered": bool(recovered),
    }
    per_heavy = {}
    for name, dt in tally.heavy:
        per_heavy.setdefault(name, []).append(dt)
    details = {
        "error_messages": tally.errors[:50],
        "busy_refusals": tally.busy,
        "light_actions": len(tally.light),
        "light_actions_while_heavy": len(light_busy),
        "light_p50_s": round(percentile(light_busy, 0.5), 3),
        "light_p95_all_s": round(percentile([dt for dt, _, _ in tally.light], 0.95), 3),
        "heavy_actions": len(tally.heavy),
        "heavy_median_s_by_action": {k: round(statistics.median(v), 2) for k, v in sorted(per_heavy.items())},
        "rss_mb_by_life": [[round(rss) for _, rss in samples] for _, samples in lives],  # every 2 s
        "rss_growth_by_life": [round(g, 3) for g in growth],
        "rss_growth_last_over_first_sample_by_life": [round(g, 3) for g in single],
        "server_start_s": [round(s, 1) for s in start_s],
        "temp_mb": [round(temp0, 1), round(temp1, 1)],
        "recovery": recovery,
    }
    return result, details


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, default=12)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--quick", action="store_true", help="4 users for 3 minutes (same mix and restart)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (server log, outputs)")
    args = ap.parse_args(argv)
    users, minutes = (4, 3.0) if args.quick else (args.users, args.minutes)
    work = Path(tempfile.mkdtemp(prefix="iclr25-soak-"))
    try:
        result, details = soak(users, minutes, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    rows = [["errors (not counting clean busy refusals)", result["errors"], "0"],
            ["light actions p95 while heavy work runs (s)", result["light_p95_s"], "≤ 1"],
            ["heavy actions, median wait (s)", result["heavy_median_wait_s"], "—"],
            ["server memory growth, minute 2 → end", result["rss_growth_ratio"], "≤ 1.10"],
            ["temp folders growth (MB)", result["temp_mb_growth"], "bounded"],
            ["after the restart: every tab + resumed run", result["restart_recovered"], "true"]]
    print(f"soak: {users} users × {minutes:g} min, one restart half-way")
    print(markdown_table(["measure", "value", "goal"], rows))
    print(json.dumps(details, indent=1)[:3000])
    RESULTS.mkdir(exist_ok=True)
    name = "soak-quick" if args.quick else "soak"
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / f"{name}-details.json").write_text(json.dumps(details, indent=2) + "\n")


if __name__ == "__main__":
    main()
