"""Hostile strategies: the sandbox refuses them or stops them, and always says why."""

import pytest

from backends.games.strategist.sandbox import SandboxedFunction, SandboxError, SandboxLimits, check_source

GOOD = '''
def helper(x):
    return x * 2

def evaluate_state(state):
    mine = [c for c in state["p0_hand"] if c > 1]
    value = math.sqrt(sum(mine)) + helper(state["p0_score"])
    return (value, float(state["p1_score"])), {"mine": len(mine)}
'''
STATE = {"p0_hand": [1, 4, 9], "p1_hand": [2], "p0_score": 3, "p1_score": 5}


def test_a_plain_strategy_runs_and_returns_checked_values():
    with SandboxedFunction(GOOD) as f:
        (values, extra), = f.evaluate([STATE])
    assert values == [pytest.approx(13 ** 0.5 + 6), 5.0] and extra == {"mine": 2.0}


@pytest.mark.parametrize("code,reason", [
    ("import os\ndef evaluate_state(s):\n    return (0, 0), {}", "Import"),
    ("from os import system\ndef evaluate_state(s):\n    return (0, 0), {}", "ImportFrom"),
    ("def evaluate_state(s):\n    return __import__('os').system('true')", "names starting with '_'|attribute '.system'"),
    ("def evaluate_state(s):\n    return ().__class__.__bases__", r"attribute '\.__(class|bases)__'"),
    ("def evaluate_state(s):\n    return s.gi_frame", "attribute '.gi_frame'"),
    ("def evaluate_state(s):\n    return open('/etc/passwd').read()", "attribute '.read'"),
    ("def evaluate_state(s):\n    with open('x') as f:\n        pass", "With"),
    ("class A:\n    pass\ndef evaluate_state(s):\n    return (0, 0), {}", "ClassDef"),
    ("def evaluate_state(s):\n    yield 1", "Yield"),
    ("def evaluate_state(s):\n    global x\n    return (0, 0), {}", "Global"),
    ("def evaluate_state(s):\n    return (lambda: 1)(), {}", "Lambda"),
    ("print('hi')\ndef evaluate_state(s):\n    return (0, 0), {}", "top-level code may not run"),
    ("def value(s):\n    return (0, 0), {}", "must define a top-level function"),
    ("def evaluate_state(s) return", "syntax error"),
])
def test_dangerous_constructs_are_refused_before_running(code, reason):
    with pytest.raises(SandboxError, match=reason):
        check_source(code)


@pytest.mark.parametrize("body", ["return eval('1')", "return exec('x=1')", "return getattr(s, 'x')",
                                  "return globals()", "return open('/etc/passwd')", "return compile('1','','eval')"])
def test_dangerous_builtins_do_not_exist_inside(body):
    with SandboxedFunction(f"def evaluate_state(s):\n    {body}") as f:
        with pytest.raises(SandboxError, match="NameError"):
            f.evaluate([STATE])


def test_an_infinite_loop_is_stopped_by_the_time_limit():
    code = "def evaluate_state(s):\n    while True:\n        pass\n"
    with SandboxedFunction(code, limits=SandboxLimits(seconds_per_call=0.5)) as f:
        with pytest.raises(SandboxError, match="took longer"):
            f.evaluate([STATE])


def test_a_memory_bomb_is_stopped_by_the_memory_limit():
    code = "def evaluate_state(s):\n    x = [0] * (10 ** 10)\n    return (0, 0), {}\n"
    with SandboxedFunction(code, limits=SandboxLimits(memory_mb=256)) as f:
        with pytest.raises(SandboxError, match="memory"):
            f.evaluate([STATE])


def test_deep_recursion_and_bad_results_are_reported():
    rec = "def evaluate_state(s):\n    return evaluate_state(s)\n"
    with SandboxedFunction(rec) as f:
        with pytest.raises(SandboxError, match="recursed"):
            f.evaluate([STATE])
    bad = "def evaluate_state(s):\n    return (1, float('nan')), {}\n"
    with SandboxedFunction(bad) as f:
        with pytest.raises(SandboxError, match="finite"):
            f.evaluate([STATE])


def test_the_worker_recovers_after_a_failure():
    code = "def evaluate_state(s):\n    if s['p0_score'] > 100:\n        while True:\n            pass\n    return (1, 2), {}\n"
    with SandboxedFunction(code, limits=SandboxLimits(seconds_per_call=0.5)) as f:
        with pytest.raises(SandboxError):
            f.evaluate([{**STATE, "p0_score": 1000}])
        assert f.evaluate([STATE])[0][0] == [1.0, 2.0]
