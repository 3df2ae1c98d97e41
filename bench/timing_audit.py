"""Finds wall-clock assertions in the tests: ``python -m bench.timing_audit`` lists them (the platform bench counts
them; the goal is none — speed goals live in bench/, and a test that asserts a time fails on a busy machine).

An assertion counts when it compares something timed: a call of ``time.time`` / ``monotonic`` / ``perf_counter``,
or a name or attribute that holds seconds (``seconds``, ``elapsed``, ``took``, ``duration``, ``deadline``,
``*_WITHIN_S``) — a deadline loop included (pytest-timeout is the guard against a hang).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMED_NAMES = re.compile(r"^(seconds|elapsed|took|duration|deadline|wall|t0|.*_WITHIN_S|.*_seconds)$")
TIME_CALLS = {"time", "monotonic", "perf_counter", "monotonic_ns", "perf_counter_ns"}


def _timed(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in TIME_CALLS \
                and isinstance(sub.func.value, ast.Name) and sub.func.value.id == "time":
            return True
        if isinstance(sub, ast.Name) and TIMED_NAMES.match(sub.id):
            return True
        if isinstance(sub, ast.Attribute) and TIMED_NAMES.match(sub.attr):
            return True
    return False


def timing_assertions(root: Path = ROOT / "tests") -> list[str]:
    """``path:line`` of every assert that compares a timed value with ``<``, ``<=``, ``>`` or ``>=``."""
    found = []
    for path in sorted(Path(root).rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assert):
                continue
            for cmp in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
                ordered = any(isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE) for op in cmp.ops)
                sides = [cmp.left, *cmp.comparators]
                untimed = [s for s in sides if not _timed(s)]
                if untimed and all(isinstance(s, ast.Constant) and s.value == 0 for s in untimed):
                    continue  # "took some time" (> 0) is no limit
                if ordered and any(_timed(side) for side in sides):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                    break
    return found


def main() -> int:
    found = timing_assertions()
    print("\n".join(found))
    print(f"{len(found)} wall-clock assertion(s) in tests/", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
