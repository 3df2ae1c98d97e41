"""Rules of the house that a reviewer would otherwise have to remember."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def _imported_modules(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, dotted name) of everything ``path`` imports, anywhere in the file (inside functions too):
    relative imports resolved, and ``from X import n`` giving ``X.n`` as well as ``X``."""
    package = list(path.relative_to(root).with_suffix("").parts[:-1])  # a module's package; an __init__'s own
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + (node.module.split(".") if node.module else []))
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{a.name}") for a in node.names if a.name != "*"]
    return found


def _cross_imports(area: str, allowed, root: Path = ROOT) -> list[str]:
    """``file:line imports name`` for each import in ``area/<a>`` of ``area.<b>.…`` that ``allowed(a, b, rest)``
    refuses (``rest``: the dotted parts after ``b``). The area's own ``__init__`` (its registry) is not scanned."""
    prefix = area.split("/")
    out = []
    for path in sorted((root / area).rglob("*.py")):
        parts = path.relative_to(root / area).with_suffix("").parts
        if parts == ("__init__",):
            continue
        for line, name in _imported_modules(path, root):
            dotted = name.split(".")
            if dotted[: len(prefix)] != prefix or len(dotted) == len(prefix):
                continue
            other, rest = dotted[len(prefix)], dotted[len(prefix) + 1:]
            if not (root / area / other).is_dir() and not (root / area / f"{other}.py").is_file():
                continue  # a name of the area's package itself (``from app.tabs import TabSpec``)
            if not allowed(parts[0], other, rest):
                out.append(f"{path.relative_to(root).as_posix()}:{line} imports {name}")
    return out


SHARED_BACKENDS = {"common", "synth"}  # what capabilities share; they import no capability themselves


def _capability_offenders(root: Path = ROOT) -> list[str]:
    def allowed(own, other, rest):
        if other == own:
            return True
        if own in SHARED_BACKENDS:  # shared code depends on no capability; synth may use common
            return other == "common"
        return other in SHARED_BACKENDS and not any(part.startswith("_") for part in rest)

    return _cross_imports("backends", allowed, root)


def _tab_offenders(root: Path = ROOT) -> list[str]:
    outside = [f"{p.relative_to(root).as_posix()}:{line} imports {name}"
               for p in sorted((root / "app" / "tabs").rglob("*.py")) for line, name in _imported_modules(p, root)
               if name.split(".")[0] == "app" and name.split(".")[1:2] not in (["components"], ["tabs"])]
    return _cross_imports("app/tabs", lambda own, other, rest: other == own, root) + outside


def test_capabilities_import_no_other_capability():
    """A capability is its own folder: what two share lives in backends/common (or synth), under a public name."""
    offenders = _capability_offenders()
    assert offenders == [], ("backends/<a> may import only itself and the public names of backends/common and "
                             "backends/synth (which import no capability); move what is shared there:\n"
                             + "\n".join(offenders))


def test_tabs_import_no_other_tab():
    """A tab is layout and wiring over app/components and the backends, never another tab's module."""
    offenders = _tab_offenders()
    assert offenders == [], ("app/tabs/<a> may import only app.components, app.tabs' TabSpec and the backends; "
                             "move what tabs share to app/components:\n" + "\n".join(offenders))


def test_the_import_scans_catch_what_this_repository_used_to_have(tmp_path):
    """Relative imports, imports inside functions, private names of synth, a tab importing a tab."""
    for folder in ("backends/textedit", "backends/layout3d", "backends/synth", "backends/common",
                   "app/tabs/games", "app/components"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    files = {
        "backends/textedit/networks.py": "import math\n\ndef f():\n    from ..layout3d import networks\n",
        "backends/layout3d/boxdepth.py": "from backends.synth.render import (\n    RenderOutput, _room_meshes)\n"
                                         "from backends.common import files\nfrom .networks import x\n",
        "backends/synth/render.py": "from backends.common.files import y\n",
        "backends/common/registry.py": "from backends import CAPABILITIES, layout3d\n",
        "app/tabs/textedit.py": "from app.tabs import TabSpec\nfrom app.components.errors import user_errors\n"
                                "from app.tabs.counterfactual import editor_to_image_and_mask\nimport app.main\n",
        "app/tabs/counterfactual.py": "from app.tabs.games.common import seed_value\n",
        "app/tabs/games/avalon.py": "from app.tabs.games.common import seed_value\nfrom . import gops\n",
        "backends/synth/__init__.py": "from backends.synth import render\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert _capability_offenders(tmp_path) == [
        "backends/common/registry.py:1 imports backends.layout3d",
        "backends/layout3d/boxdepth.py:1 imports backends.synth.render._room_meshes",
        "backends/textedit/networks.py:4 imports backends.layout3d",
        "backends/textedit/networks.py:4 imports backends.layout3d.networks"]
    assert _tab_offenders(tmp_path) == [
        "app/tabs/counterfactual.py:1 imports app.tabs.games.common",
        "app/tabs/counterfactual.py:1 imports app.tabs.games.common.seed_value",
        "app/tabs/textedit.py:3 imports app.tabs.counterfactual",
        "app/tabs/textedit.py:3 imports app.tabs.counterfactual.editor_to_image_and_mask",
        "app/tabs/textedit.py:4 imports app.main"]


def test_backends_never_import_gradio():
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "backends").rglob("*.py") if "gradio" in _imports(p)]
    assert offenders == []


# Tab modules written but not shown yet, each with the reason (a tab either does the real thing or is
# not shown): take a line out when its tab is registered.
NOT_YET_SHOWN: dict[str, str] = {}


def test_every_tab_module_is_registered():
    """A tab is a module of app/tabs, or a package there (its parts in modules of their own), registered once."""
    from app.tabs import all_tabs

    registered = [t.name for t in all_tabs()]
    tabs = ROOT / "app" / "tabs"
    modules = {p.stem for p in tabs.glob("*.py") if p.stem != "__init__"}
    packages = {p.parent.name for p in tabs.glob("*/__init__.py")}
    assert not modules & packages
    assert modules | packages == set(registered) | set(NOT_YET_SHOWN) and len(registered) == len(set(registered))
    for name in packages:  # a package is one tab: its __init__ exposes TAB
        import importlib

        assert importlib.import_module(f"app.tabs.{name}").TAB.name == name


def test_building_the_app_imports_no_torch():
    import subprocess
    import sys

    code = "import sys; from app.main import build_app; build_app(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False", "models and torch must load lazily, on first use"


def test_the_header_counts_the_registered_papers():
    from app.main import header
    from app.tabs import all_tabs

    tabs = all_tabs()
    text = header(tabs)
    papers = [t for t in tabs if t.name != "system"]
    assert all(t.title in text for t in papers)
    assert "System" not in text.split("\n", 1)[1]
    assert header(papers[:3]).split("\n")[1].startswith("Three ICLR 2025 papers")


def test_shipped_configs_name_no_folder_of_the_training_machine():
    """``save_pretrained`` records where weights were loaded from; exports drop it (training/asset_files.py)."""
    import json

    configs = {str(p.relative_to(ROOT)): json.loads(p.read_text()) for p in (ROOT / "assets").rglob("config.json")}
    assert len(configs) >= 6
    assert [name for name, c in configs.items() if str(c.get("_name_or_path", "")).startswith("/")] == []


# What a tab may not do: it lays out components and wires them to backend actions.
WRITES = {"write_text", "write_bytes", "save", "savez", "savez_compressed", "save_png", "save_depth_png16",
          "copy2", "copyfile", "copytree", "mkdir", "unlink", "rmtree", "dump", "symlink_to", "touch"}
BUILD_MAX_LINES = 120


def _tab_rule_offenders(root: Path = ROOT) -> list[str]:
    """``file:line what`` for each numpy import, file-writing call or ``open(..., "w")`` under app/tabs, and each
    ``build`` function longer than BUILD_MAX_LINES."""
    out = []
    for path in sorted((root / "app" / "tabs").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(n.split(".")[0] == "numpy" for n in names):
                    out.append(f"{rel}:{node.lineno} imports numpy")
            elif isinstance(node, ast.Call):
                fn = node.func
                name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
                if name in WRITES:
                    out.append(f"{rel}:{node.lineno} calls {name}")
                elif name == "open" and any(isinstance(a, ast.Constant) and isinstance(a.value, str)
                                            and set(a.value) & set("wax+") for a in [*node.args[1:2],
                                            *(k.value for k in node.keywords if k.arg == "mode")]):
                    out.append(f"{rel}:{node.lineno} opens a file for writing")
            elif isinstance(node, ast.FunctionDef) and node.name == "build":
                length = node.end_lineno - node.lineno + 1
                if length > BUILD_MAX_LINES:
                    out.append(f"{rel}:{node.lineno} build() has {length} lines")
    return sorted(out, key=lambda line: (line.split(":")[0], int(line.split(":")[1].split()[0])))


def test_tabs_hold_no_image_math_write_no_file_and_build_briefly():
    """Algorithms and file writing live in the backends (outputs.py, uploads.py…); a tab is layout and wiring."""
    assert _tab_rule_offenders() == []


def test_the_tab_rule_scan_catches_what_it_forbids(tmp_path):
    (tmp_path / "app" / "tabs").mkdir(parents=True)
    body = "\n".join("    x = 1" for _ in range(BUILD_MAX_LINES))
    (tmp_path / "app" / "tabs" / "demo.py").write_text(
        "import numpy as np\nfrom pathlib import Path\n\n"
        f"def build(demo):\n{body}\n\n"
        "def on_run(p):\n    Path(p).write_text('x')\n    open(p, 'w')\n    open(p)\n    np.save(p, 1)\n")
    assert _tab_rule_offenders(tmp_path) == [
        "app/tabs/demo.py:1 imports numpy", f"app/tabs/demo.py:4 build() has {BUILD_MAX_LINES + 1} lines",
        f"app/tabs/demo.py:{BUILD_MAX_LINES + 7} calls write_text",
        f"app/tabs/demo.py:{BUILD_MAX_LINES + 8} opens a file for writing",
        f"app/tabs/demo.py:{BUILD_MAX_LINES + 10} calls save"]
