"""Every capability has all its parts (as OpenSpiel checks every registered game): a capability is a folder and
one name in ``backends.CAPABILITIES``, and the README's *Adding a capability* lists exactly what is checked here."""

from __future__ import annotations

import argparse
import ast
import importlib
from pathlib import Path

import pytest

from backends import CAPABILITIES, actions, spec, specs
from backends.common.action import Action
from backends.common.capability import GROUPS, Capability
from backends.common.params import fields_of

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(params=CAPABILITIES)
def name(request) -> str:
    return request.param


def test_the_spec_names_the_capability_and_its_group(name):
    s = spec(name)
    assert isinstance(s, Capability) and s.name == name
    assert s.group in GROUPS and s.title and s.paper and s.summary


def test_requests_declare_their_fields(name):
    module = importlib.import_module(f"backends.{name}.requests")
    own = [v for v in vars(module).values()
           if isinstance(v, type) and v.__module__ == module.__name__ and v.__name__.endswith("Request")]
    assert own, f"backends/{name}/requests.py defines no request"
    for request_type in own:
        assert fields_of(request_type), f"{request_type.__name__} declares no field with params.param"


def test_actions_are_named_after_the_capability_and_take_declared_requests(name):
    found = actions(name)
    assert found, f"backends/{name}/actions.py lists no ACTIONS"
    for action in found:
        assert isinstance(action, Action) and action.capability == name and action.name.startswith(name + "_")
        assert fields_of(action.request_type), f"{action.name}'s request declares no field"


def test_the_cli_subcommand_is_built_from_the_module(name):
    module = importlib.import_module(f"backends.{name}.cli")
    assert isinstance(module.HELP, str) and module.HELP
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    assert callable(module.run)
    # at least one option comes from a request (add_request_arguments marks the options it made), in the
    # subcommand or in one of its own subcommands (``avatar reconstruct``)
    def options(p: argparse.ArgumentParser):
        for a in p._actions:
            yield a
            if isinstance(a, argparse._SubParsersAction):
                for sub in a.choices.values():
                    yield from options(sub)

    assert any(getattr(a, "request_field", None) is not None for a in options(parser)), \
        f"backends/{name}/cli.py makes no option from a request (backends.common.params.add_request_arguments)"


def test_the_tab_is_the_capabilitys(name):
    module = importlib.import_module(f"app.tabs.{name}")
    assert module.TAB.name == name and module.TAB.title == spec(name).title


def test_tests_bench_and_docs_exist(name):
    assert any((ROOT / "tests" / "backends" / name).glob("test_*.py")), f"no tests/backends/{name}/test_*.py"
    assert list((ROOT / "tests" / "app").glob(f"test_{name}*api*.py")), f"no tests/app/test_{name}_api.py"
    assert (ROOT / "tests" / "browser" / f"test_{name}.py").is_file()
    assert (ROOT / "bench" / f"{name}.py").is_file()
    assert (ROOT / "docs" / f"{name}.md").is_file()


def test_backends_never_import_gradio_and_capabilities_never_import_each_other(name):
    others = set(CAPABILITIES) - {name}
    for path in (ROOT / "backends" / name).rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for m in modules:
                assert not m.startswith("gradio"), f"{path.relative_to(ROOT)} imports {m}"
                parts = m.split(".")
                assert not (parts[0] == "backends" and len(parts) > 1 and parts[1] in others), \
                    f"{path.relative_to(ROOT)} imports another capability: {m}"


def test_shared_code_keeps_no_list_of_capabilities():
    """Nothing outside a capability's folder lists capabilities by name: they loop over ``backends.specs()``."""
    listed = []
    for folder in ("backends/common", "bench", "training", "app/components"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Tuple | ast.List | ast.Set) and len(node.elts) >= 2:
                    words = [e.value for e in node.elts if isinstance(e, ast.Constant)]
                    if sum(w in CAPABILITIES for w in words) >= 2:
                        listed.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert listed == []


def test_every_group_in_use_is_known():
    assert {s.group for s in specs()} <= set(GROUPS)
