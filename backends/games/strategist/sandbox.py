"""Run value heuristics written by an LLM without trusting them.

Two walls:
1. an AST allow-list, checked before anything runs: plain arithmetic, comparisons, loops, comprehensions,
   local functions, a handful of builtins and ``math``; no imports, no names or attributes that start
   with an underscore, no attribute access except a fixed list of harmless methods, no exec/eval/open/
   getattr/globals, no classes, lambdas-as-escape, ``with``, ``yield`` or async;
2. execution in a separate worker process with a memory cap (RLIMIT_AS), a per-call time limit (the
   worker is killed when a call overruns), and builtins reduced to the allow-list.

A rejected or failing strategy raises :class:`SandboxError` with a reason a person (or the LLM, when
it is asked to repair its code) can read; it never takes the caller down.
"""

from __future__ import annotations

import ast
import json
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from backends.common.progress import CancelToken, raise_if_cancelled

ENTRY = "evaluate_state"
WORKER = Path(__file__).with_name("sandbox_worker.py")

SAFE_BUILTINS = (
    "abs", "all", "any", "bool", "dict", "enumerate", "filter", "float", "int", "len", "list", "map", "max",
    "min", "range", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "zip", "isinstance",
    "ValueError", "ZeroDivisionError", "Exception",
)
SAFE_METHODS = {
    "get", "items", "keys", "values", "append", "extend", "insert", "pop", "index", "count", "sort", "copy",
    "add", "discard", "remove", "update", "union", "intersection", "difference", "issubset", "issuperset",
    "sqrt", "log", "exp", "floor", "ceil", "comb", "factorial", "inf", "pi", "e", "isclose", "fabs", "tanh", "prod", "fsum",
}
ALLOWED_NODES = (
    ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.Assign, ast.AugAssign, ast.AnnAssign,
    ast.For, ast.While, ast.If, ast.Break, ast.Continue, ast.Pass, ast.Expr, ast.BoolOp, ast.BinOp, ast.UnaryOp,
    ast.Compare, ast.Call, ast.keyword, ast.IfExp, ast.Dict, ast.Set, ast.List, ast.Tuple, ast.ListComp,
    ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.comprehension, ast.Constant, ast.Name, ast.Load, ast.Store,
    ast.Del, ast.Subscript, ast.Slice, ast.Attribute, ast.Starred, ast.JoinedStr, ast.FormattedValue, ast.Try,
    ast.ExceptHandler, ast.Raise, ast.Assert, ast.Delete,
    ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context,
)
MAX_SOURCE_CHARS = 20_000


class SandboxError(Exception):
    """The strategy was refused or failed; ``str(e)`` says why."""


def check_source(source: str, entry: str = ENTRY) -> ast.Module:
    """Parse and vet ``source``; it must define ``entry(state)`` and use only allowed constructs."""
    if not isinstance(source, str) or not source.strip():
        raise SandboxError("no code was given")
    if len(source) > MAX_SOURCE_CHARS:
        raise SandboxError(f"the code is longer than {MAX_SOURCE_CHARS} characters")
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise SandboxError(f"syntax error on line {e.lineno}: {e.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, ALLOWED_NODES):
            raise SandboxError(f"line {getattr(node, 'lineno', '?')}: {type(node).__name__} is not allowed")
        if isinstance(node, ast.Name) and node.id.startswith("_"):
            raise SandboxError(f"line {node.lineno}: names starting with '_' are not allowed ({node.id})")
        if isinstance(node, ast.Attribute) and (node.attr.startswith("_") or node.attr not in SAFE_METHODS):
            raise SandboxError(f"line {node.lineno}: attribute '.{node.attr}' is not allowed")
        if isinstance(node, ast.FunctionDef):
            if node.decorator_list:
                raise SandboxError(f"line {node.lineno}: decorators are not allowed")
        if isinstance(node, ast.arg) and node.arg.startswith("_"):
            raise SandboxError(f"line {node.lineno}: argument names starting with '_' are not allowed")
    if not any(isinstance(n, ast.FunctionDef) and n.name == entry for n in tree.body):
        raise SandboxError(f"the code must define a top-level function `{entry}(state)`")
    for n in tree.body:
        if not isinstance(n, ast.FunctionDef | ast.Assign | ast.Expr):
            raise SandboxError(f"line {n.lineno}: only functions and constants may stand at the top level")
        if isinstance(n, ast.Expr) and not isinstance(n.value, ast.Constant):
            raise SandboxError(f"line {n.lineno}: top-level code may not run anything")
    return tree


@dataclass
class SandboxLimits:
    seconds_per_call: float = 1.0
    memory_mb: int = 512
    startup_seconds: float = 20.0


def load_trusted(source: str, entry: str = ENTRY):
    """Compile the project's own hand-written strategy in-process (vetted by the same AST check, run
    with the same reduced builtins). Never for an LLM's code: that goes to :class:`SandboxedFunction`."""
    import builtins
    import math

    check_source(source, entry)
    scope: dict = {"__builtins__": {n: getattr(builtins, n) for n in SAFE_BUILTINS}, "math": math}
    exec(compile(source, "<hand-written>", "exec"), scope)  # our own code, not an LLM's
    return scope[entry]


class SandboxedFunction:
    """A vetted strategy function living in its own worker process; call it with JSON-able states.

    ``evaluate(states)`` returns one result per state. Use as a context manager (or call ``close``).
    """

    def __init__(self, source: str, entry: str = ENTRY, limits: SandboxLimits | None = None):
        check_source(source, entry)
        self.source, self.entry = source, entry
        self.limits = limits or SandboxLimits()
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def _start(self) -> None:
        mem = self.limits.memory_mb * 2**20

        def limit():  # runs in the child before exec
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
            resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))
            os.setsid()

        env = {"PATH": os.environ.get("PATH", "")}
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, preexec_fn=limit, env=env, text=True, bufsize=1,
        )
        reply = self._roundtrip({"source": self.source, "entry": self.entry, "builtins": list(SAFE_BUILTINS)},
                                self.limits.startup_seconds)
        if not reply.get("ok"):
            self.close()
            raise SandboxError(reply.get("error", "the strategy could not be loaded"))

    def _roundtrip(self, message: dict, timeout: float, cancel: CancelToken | None = None) -> dict:
        """Send one request line and wait (``select``, no helper thread: this runs per batch of leaves)
        up to ``timeout`` seconds for the reply line; a worker that overruns is killed, and so is one
        whose job is stopped meanwhile (``cancel``, checked every 0.1 s: Stop ends a slow strategy)."""
        proc = self._proc
        try:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            deadline = time.monotonic() + timeout
            while not (ready := select.select([proc.stdout], [], [], min(0.1, timeout))[0]):
                if cancel is not None and cancel.cancelled:
                    self.close()
                    raise_if_cancelled(cancel)
                if time.monotonic() >= deadline:
                    break
            if not ready:
                self.close()
                raise SandboxError(f"the strategy took longer than {timeout:g} s and was stopped")
            line = proc.stdout.readline()
            reply = json.loads(line) if line else {"ok": False, "error": "the worker died"}
        except (OSError, ValueError) as e:
            reply = {"ok": False, "error": f"the worker failed ({e.__class__.__name__})"}
        if not reply.get("ok") and proc.poll() is not None:
            self.close()
            code = proc.returncode
            if code and code < 0:
                reply["error"] = f"the worker was killed by signal {-code} (memory or CPU limit)"
            elif "error" not in reply or reply["error"] == "the worker died":
                reply["error"] = "the strategy exceeded its memory limit or crashed the worker"
        return reply

    def evaluate(self, states: list, cancel: CancelToken | None = None) -> list:
        """One result per state; ``cancel`` (the job's Stop) kills the worker mid-call (Cancelled)."""
        with self._lock:
            if cancel is not None and cancel.cancelled:  # stopped before the call: no worker outlives its job
                self.close()
                raise_if_cancelled(cancel)
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            timeout = self.limits.seconds_per_call * max(1, len(states)) + 1.0
            reply = self._roundtrip({"states": states}, timeout, cancel)
        if not reply.get("ok"):
            raise SandboxError(reply.get("error", "the strategy failed"))
        return reply["results"]

    def close(self) -> None:
        if self._proc is not None:
            try:
                os.killpg(self._proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
            self._proc.wait(timeout=5)
            self._proc = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


_SHARED: dict[str, SandboxedFunction] = {}
_SHARED_LOCK = threading.Lock()
SHARED_WORKERS = 4


def open_sandboxed(source: str, reuse: bool = False):
    """(``evaluate`` of a sandbox running ``source``, the sandbox to close or None): a long-lived shared
    one with ``reuse`` (the app: one decision per call), else a fresh one the caller closes."""
    if reuse:
        return shared(source).evaluate, None
    fn = SandboxedFunction(source)
    return fn.evaluate, fn


def shared(source: str) -> SandboxedFunction:
    """A long-lived sandbox for ``source``, reused across calls (a game in the app asks a strategy once per
    move; starting a worker each time costs ~50 ms). The least recently used of ``SHARED_WORKERS`` closes."""
    with _SHARED_LOCK:
        fn = _SHARED.pop(source, None)
        if fn is None:
            fn = SandboxedFunction(source)
        _SHARED[source] = fn
        while len(_SHARED) > SHARED_WORKERS:
            _SHARED.pop(next(iter(_SHARED))).close()
        return fn
