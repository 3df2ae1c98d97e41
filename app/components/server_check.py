"""Gradio's check that the server it just started answers, made patient enough for a busy machine.

``Blocks.launch`` asks its new server for a page (``gradio.networking.url_ok``): five tries, but the first that
times out after 3 s gives up, and launch then refuses to start ("When localhost is not accessible, a shareable
link must be created"). On a loaded 2-core machine the server's first answer can take longer than that, so the
suite's launch waits up to a minute, retrying on time-outs and refused connections alike.
"""

from __future__ import annotations

import time
import warnings

ANSWERED = (200, 401, 301, 302, 303, 307, 308)  # what gradio accepts as "the server is up"


def patient_url_ok(url: str, budget_s: float = 60.0) -> bool:
    """True once ``url`` answers; False only after ``budget_s`` seconds of trying."""
    import httpx

    deadline = time.monotonic() + budget_s
    while True:
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore")
                if httpx.head(url, timeout=5, verify=False).status_code in ANSWERED:
                    return True
        except (httpx.ConnectError, httpx.TimeoutException, ConnectionError):
            pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


_gradios_url_ok = None


def gradios_url_ok():
    """Gradio's own check, as Gradio ships it (after :func:`install` too)."""
    from gradio import networking

    return _gradios_url_ok or networking.url_ok


def install() -> None:
    """Launch's check (looked up on the module at call time) becomes :func:`patient_url_ok`."""
    global _gradios_url_ok
    from gradio import networking

    if networking.url_ok is not patient_url_ok:
        _gradios_url_ok = networking.url_ok
    networking.url_ok = patient_url_ok
