"""The launch check waits for a server that answers late instead of refusing to start."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from app.components.server_check import gradios_url_ok, patient_url_ok
from tests.conftest import free_port


class _Up(BaseHTTPRequestHandler):
    def do_HEAD(self):  # noqa: N802
        self.send_response(200)
        self.end_headers()

    def log_message(self, *a):
        pass


def test_a_server_that_starts_listening_late_is_found_where_gradios_check_gives_up():
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    assert not gradios_url_ok()(url)  # nothing listens yet: gradio's own check gives up at once
    servers = []

    def start_late():
        servers.append(HTTPServer(("127.0.0.1", port), _Up))
        servers[0].serve_forever()

    timer = threading.Timer(1.0, start_late)
    timer.start()
    try:
        assert patient_url_ok(url, budget_s=30)
    finally:
        while timer.is_alive() and not servers:
            timer.join(0.1)
        servers[0].shutdown()
        timer.join()


def test_a_server_that_never_answers_is_reported_after_the_budget():
    assert not patient_url_ok(f"http://127.0.0.1:{free_port()}/", budget_s=0.5)
