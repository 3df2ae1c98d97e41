"""The sandbox's worker process (run isolated: ``python -I -S sandbox_worker.py``; stdlib only).

Reads one JSON request per line on stdin: first the strategy (source, entry name, allowed builtins),
then batches of states. Answers one JSON line each. The strategy sees only the allowed builtins and
``math``; results must be ((number, number), dict) with finite numbers and are checked before they leave.
"""

import builtins
import json
import math
import sys


def clean(result):
    values, extra = result
    v0, v1 = (float(x) for x in values)
    if not (math.isfinite(v0) and math.isfinite(v1)):
        raise ValueError("values must be finite numbers")
    if not isinstance(extra, dict):
        raise ValueError("the second element must be a dict of intermediate values")
    items = list(extra.items())[:50]
    return [[v0, v1], {str(k): (float(v) if isinstance(v, int | float) else str(v)[:200]) for k, v in items}]


def watch_owner():
    """End this worker when the process that started it is gone (killed with a stopped job's pool, say):
    the worker runs in a session of its own, so nothing else would stop a strategy that loops."""
    import os
    import threading
    import time

    owner = os.getppid()

    def watch():
        while os.getppid() == owner:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def main():
    watch_owner()
    fn = None
    for line in sys.stdin:
        try:
            msg = json.loads(line)
            if "source" in msg:
                allowed = {name: getattr(builtins, name) for name in msg["builtins"] if hasattr(builtins, name)}
                scope = {"__builtins__": allowed, "math": math}
                exec(compile(msg["source"], "<strategy>", "exec"), scope)  # vetted by check_source first
                fn = scope[msg["entry"]]
                out = {"ok": True}
            else:
                out = {"ok": True, "results": [clean(fn(s)) for s in msg["states"]]}
        except MemoryError:
            out = {"ok": False, "error": "the strategy exceeded its memory limit"}
        except RecursionError:
            out = {"ok": False, "error": "the strategy recursed too deeply"}
        except Exception as e:  # the strategy's own error, reported to the caller
            out = {"ok": False, "error": f"{type(e).__name__}: {str(e)[:300]}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
