"""The recorded capable model (../shared/eval/capable-model/replay.py) and a meter in front of it.

`start_replay` runs replay.py on a free port (its log in a directory of ours, not the cwd).
`Meter` is an OpenAI-compatible pass-through the host is pointed at instead: it forwards every
request unchanged to the model server and notes what each call cost, so a bench can say what a
session would cost on a real model. replay.py reports no prompt tokens (and relay.py a
characters/4 guess), so input tokens are counted here from the request with the project's own
estimate (`estimate_tokens` per message plus the chunker's per-message overhead: the same
figure the extractor budgets with; it errs high); output tokens are the server's
`completion_tokens` when it reports them, else the same estimate of the reply.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from entity_memory.domain.text import estimate_tokens
from entity_memory.extraction.llm.chunking import MESSAGE_OVERHEAD_TOKENS

ROOT = Path(__file__).resolve().parent.parent
CAPABLE_DIR = ROOT.parent / "shared" / "eval" / "capable-model"
READY_TIMEOUT_S = 30
#: A forwarded call waits as long as the host's own per-call timeout allows (relay: minutes).
FORWARD_TIMEOUT_S = 3600


@dataclass(frozen=True)
class Call:
    """One model call that went through the meter."""

    status: int
    model: str  # the model the request named
    input_tokens: int  # estimated from the request (see the module docstring)
    output_tokens: int  # the server's completion_tokens, else estimated from the reply
    reported_input_tokens: int  # what the server said (replay.py: 0)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_ready(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} not ready in {READY_TIMEOUT_S} s")


@contextmanager
def start_replay(log_dir: Path, replies: Path | None = None) -> Iterator[str]:
    """replay.py on a free port; yields its `/v1` base URL. Raises when it is not there."""
    script = CAPABLE_DIR / "replay.py"
    if not script.exists():
        raise FileNotFoundError(f"{script} not found (the shared evaluation data is absent)")
    port = _free_port()
    cmd = [sys.executable, str(script), "--port", str(port), "--log", str(log_dir / "replay.log")]
    if replies is not None:
        cmd += ["--replies", str(replies)]
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/v1"
        _wait_ready(f"{base}/models", process)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


def _request(body: bytes) -> tuple[str, int]:
    """(the model named, estimated input tokens) of a chat request."""
    try:
        request = json.loads(body or b"{}")
    except ValueError:
        return "", 0
    messages = request.get("messages") or []
    return str(request.get("model") or ""), sum(
        estimate_tokens(str(m.get("content") or "")) + MESSAGE_OVERHEAD_TOKENS
        for m in messages
        if isinstance(m, dict)
    )


def _output_tokens(raw: bytes) -> tuple[int, int]:
    """(output tokens, reported input tokens) of an OpenAI-style reply."""
    try:
        reply = json.loads(raw or b"{}")
    except ValueError:
        return 0, 0
    usage = reply.get("usage") or {}
    out = usage.get("completion_tokens")
    if not isinstance(out, int):
        choices = reply.get("choices") or [{}]
        out = estimate_tokens(str((choices[0].get("message") or {}).get("content") or ""))
    reported_in = usage.get("prompt_tokens")
    return out, reported_in if isinstance(reported_in, int) else 0


class Meter:
    """A pass-through to `upstream` (an OpenAI-compatible `/v1` base URL) that records calls."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self._calls: list[Call] = []
        self._lock = threading.Lock()
        meter = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _forward(self, body: bytes | None) -> None:
                path = self.path.removeprefix("/v1")
                request = urllib.request.Request(
                    meter.upstream + path,
                    data=body,
                    method=self.command,
                    headers={"content-type": "application/json"},
                )
                try:
                    with urllib.request.urlopen(request, timeout=FORWARD_TIMEOUT_S) as r:
                        status, raw = r.status, r.read()
                except urllib.error.HTTPError as err:
                    status, raw = err.code, err.read()
                if body is not None:
                    out, reported_in = _output_tokens(raw) if status == 200 else (0, 0)
                    model, tokens_in = _request(body)
                    meter._record(Call(status, model, tokens_in, out, reported_in))
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                self._forward(self.rfile.read(int(self.headers.get("content-length", 0))))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _record(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)

    def take(self) -> list[Call]:
        """The calls since the last `take` (a bench takes them after each session)."""
        with self._lock:
            calls, self._calls = self._calls, []
        return calls

    @contextmanager
    def running(self) -> Iterator[Meter]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
