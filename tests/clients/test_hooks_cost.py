"""What keeps the SessionStart hook inside its budget on a busy machine, checked without
timing it: the context request needs no third-party import (httpx alone outlasted the budget
at load 8 on 2 cores), and the budget counts from the process's own start."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from entity_memory_client import hooks

from .conftest import CLIENT_SRC

CONTEXT = {"context": "<entity_memory>\n</entity_memory>", "entities": []}


class _Context(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        seen = {"path": self.path, "auth": self.headers.get("authorization"), "body": body}
        payload = json.dumps({**CONTEXT, "seen": seen}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def service() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Context)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_context_request_imports_no_http_library(service: str) -> None:
    script = (
        "import json, sys\n"
        "from entity_memory_client import hooks\n"
        f"r = hooks.fetch_context({service!r}, 'tok', 'ann/bo', 'review bids', 30)\n"
        "print(json.dumps({'seen': r['seen'], 'httpx': 'httpx' in sys.modules}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": CLIENT_SRC, "PATH": "/usr/bin:/bin"},
        check=True,
    )
    out = json.loads(done.stdout)
    assert out["httpx"] is False
    assert out["seen"]["path"] == "/v1/users/ann%2Fbo/context"  # the id is one path segment
    assert out["seen"]["auth"] == "Bearer tok"
    assert out["seen"]["body"]["task"] == "review bids"


def test_a_refused_connection_is_an_error_the_hook_reports() -> None:
    with pytest.raises(OSError):
        hooks.fetch_context("http://127.0.0.1:9", None, "ann", "t", 5)


def test_the_budget_counts_from_the_process_start() -> None:
    # This process started before this line ran: its start is never later than a later mark.
    mark = time.monotonic()
    assert hooks.process_start(mark) <= mark
