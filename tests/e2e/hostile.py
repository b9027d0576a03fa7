"""Requests a well-behaved HTTP client will not send, for the hostile-input tests and
bench.hostile_bodies: a chunked upload that does not stop, a body shorter than its declared
length, the escaped-quote body that made a backtracking pattern quadratic."""

from __future__ import annotations

import select
import socket
from urllib.parse import urlsplit

#: Content types FastAPI parses as JSON, and some it does not: the depth check ignores them.
CONTENT_TYPES = (
    "application/JSON",
    "Application/Json; charset=utf-8",
    "application/vnd.campaign+json",
    None,
    "text/plain",
)


def quadratic_body(size: int) -> bytes:
    """An opening quote, escaped quotes, then 65 brackets: `size` bytes."""
    return b'"' + b'\\"' * ((size - 66) // 2) + b"[" * 65


def _connect(base_url: str, timeout: float) -> socket.socket:
    url = urlsplit(base_url)
    return socket.create_connection((url.hostname, url.port), timeout=timeout)


def _status(sock: socket.socket) -> int:
    """The response's status code (0 when the connection closed with none)."""
    head = b""
    while b"\r\n" not in head:
        try:
            got = sock.recv(4096)
        except (ConnectionResetError, TimeoutError):
            break
        if not got:
            break
        head += got
    parts = head.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def chunked_upload(
    base_url: str, path: str, total: int, chunk: int = 64 * 1024, timeout: float = 60
) -> tuple[int, int]:
    """(status, bytes sent before the answer) of a chunked POST of up to `total` bytes that
    stops sending as soon as the server answers or closes."""
    sock = _connect(base_url, timeout)
    sent = 0
    try:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n"
        )
        sock.sendall(head.encode())
        piece = f"{chunk:x}\r\n".encode() + b" " * chunk + b"\r\n"
        while sent < total:
            if select.select([sock], [], [], 0)[0]:
                break  # the server answered (or closed): stop sending
            try:
                sock.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += chunk
        return _status(sock), sent
    finally:
        sock.close()


def short_body(base_url: str, path: str, declared: int, body: bytes, timeout: float = 60) -> int:
    """The status answered to a body shorter than its declared `Content-Length` (the client
    then waits, sending nothing more)."""
    sock = _connect(base_url, timeout)
    try:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Content-Length: {declared}\r\n\r\n"
        )
        sock.sendall(head.encode() + body)
        return _status(sock)
    finally:
        sock.close()
