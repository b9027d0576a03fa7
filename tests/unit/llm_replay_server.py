"""A local OpenAI-compatible server that replays scripted replies, for PROTOCOL tests.

It tests our HTTP client, not a model: each POST to `/v1/chat/completions` is recorded (path,
headers, JSON body) and answered with the next scripted `Reply` (status, body, optional delay).
The scripted bodies are hand-written in the shape real servers send (OpenAI, vLLM, llama.cpp).
Runs `http.server` in a thread on 127.0.0.1 with a free port.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: str | dict[str, Any] = ""
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw)


def completion(
    content: str | None,
    *,
    prompt_tokens: int | None = 812,
    completion_tokens: int | None = 164,
    finish_reason: str = "stop",
    model: str = "replay-model",
) -> Reply:
    """A 200 chat completion whose message content is `content`, as OpenAI shapes it."""
    body: dict[str, Any] = {
        "id": "chatcmpl-replay-0001",
        "object": "chat.completion",
        "created": 1_780_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
    }
    if prompt_tokens is not None:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + (completion_tokens or 0),
        }
    return Reply(200, body)


def error(
    status: int, message: str, *, type_: str = "invalid_request_error", **extra: Any
) -> Reply:
    """An OpenAI-style error body."""
    return Reply(status, {"error": {"message": message, "type": type_, **extra}})


class ReplayServer:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                reply = server._record(
                    Recorded(
                        "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, raw
                    )
                )
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                body = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = body.encode("utf-8")
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def _record(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            if not self._script:
                return error(500, "replay server: no scripted reply left", type_="server_error")
            return self._script.pop(0)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()

    def start(self) -> ReplayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
