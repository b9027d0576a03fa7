"""Run llama-server once on a tiny prompt and say why when it cannot answer.

Setup calls this after building (or finding) the binary: a server that dies on its first
request (an instruction this CPU lacks) must fail setup with its reason, not leave the host
waiting minutes for a model that never answers. Standard library only: it runs before the venv.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import IO

READY_TIMEOUT_S = 240
ANSWER_TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def how_it_ended(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def get(url: str, timeout: float) -> int:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return int(r.status)


def main(server: str, model: str) -> int:
    with tempfile.TemporaryFile() as log:
        return run(server, model, log)


def run(server: str, model: str, log: IO[bytes]) -> int:
    port = free_port()
    args = [server, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-c", "512"]
    proc = subprocess.Popen([*args, "--no-webui"], stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                return fail(proc, log, "before it was ready")
            try:
                if get(f"{base}/health", 2) == 200:
                    break
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                return fail(proc, log, f"not ready after {READY_TIMEOUT_S} s")
            time.sleep(0.5)
        body = {"messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 4}
        req = urllib.request.Request(
            f"{base}/v1/chat/completions",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=ANSWER_TIMEOUT_S) as r:
                reply = json.load(r)
        except (OSError, urllib.error.URLError) as e:
            time.sleep(0.5)
            return fail(proc, log, f"on its first request ({e})")
        text = reply.get("choices", [{}])[0].get("message", {}).get("content", "")
        tokens = reply.get("usage", {}).get("completion_tokens", 0)
        print(f"llm_smoke: llama-server answered {text!r} ({tokens} tokens)", file=sys.stderr)
        return 0
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def fail(proc: subprocess.Popen[bytes], log: IO[bytes], when: str) -> int:
    code = proc.poll()
    ended = how_it_ended(code) if code is not None else "still running"
    log.seek(0)
    tail = log.read().decode(errors="replace").strip().splitlines()[-15:]
    print(f"llm_smoke: llama-server failed {when}: {ended}", file=sys.stderr)
    for line in tail:
        print(f"  | {line}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
