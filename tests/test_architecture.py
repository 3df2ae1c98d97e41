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
