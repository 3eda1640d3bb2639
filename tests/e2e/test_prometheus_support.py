"""The test Prometheus client's answers while the server is not ready (prometheus_support.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.e2e.prometheus_support import Prometheus, QueryError


class _NotReady(BaseHTTPRequestHandler):
    """Answers as Prometheus does before its storage is open: 503 with a plain-text body."""

    def do_GET(self) -> None:
        """Answer 503 with a plain-text body."""
        body = b"Service Unavailable"
        self.send_response(503)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Keep the test's output clean."""


@pytest.fixture
def not_ready_server() -> Iterator[int]:
    """The port of a server that answers every request as a starting Prometheus does."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotReady)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_plain_text_answer_is_a_query_error_that_waiting_tolerates(not_ready_server: int, tmp_path: Path) -> None:
    prometheus = Prometheus("prometheus", {"pairing": ["127.0.0.1:1"]}, tmp_path)
    prometheus.port = not_ready_server
    with pytest.raises(QueryError, match="not a JSON answer: b'Service Unavailable'"):
        prometheus.api("targets")
    with pytest.raises(AssertionError, match="every target scraped"):
        prometheus.wait_until("every target scraped", lambda: prometheus.api("targets"), timeout=0.5)
