"""Claude Code hooks with real hook payloads and a real transcript JSONL.

session-start prints the remembered context as `hookSpecificOutput.additionalContext`;
session-end / pre-compact / stop upload the transcript's user and assistant text in a detached
background process (checked by what the service stored). Every hook exits 0 and never waits
for the service: the slow service here holds every request until the test ends, so a hook
that waited on it would run into `run_hook`'s timeout (no bound on how fast a busy machine
starts Python is assumed).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from entity_memory_client import EntityMemory

from .conftest import REPO
from .test_transcript import FIXTURE, NOT_CONVERSATION

pytestmark = pytest.mark.e2e

SESSION = "5f0c2a7e-1b2d-4c3e-9f8a-0d1e2f3a4b5c"
EVENTS = {
    "session-start": {"hook_event_name": "SessionStart", "source": "startup"},
    "session-end": {"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"},
    "pre-compact": {"hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""},
    "stop": {"hook_event_name": "Stop", "stop_hook_active": False},
}
#: Far beyond a hook's own budget (ENTITY_MEMORY_HOOK_TIMEOUT, 0.5 s by default) and Python's
#: start-up on a loaded machine; a hook that waited on a hanging service would reach it.
HOOK_DEADLINE_S = 60
#: A live service's answer is what these checks read, not how fast it came: a hook talking
#: to the (busy) test host gets a budget no load reaches; the slow service keeps the default.
LIVE_BUDGET = {"ENTITY_MEMORY_HOOK_TIMEOUT": "30"}
#: How long the slow service holds a request: longer than any hook may take.
HANG_S = HOOK_DEADLINE_S * 2


def payload(event: str, transcript: Path, cwd: Path) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "permission_mode": "default",
        **EVENTS[event],
    }


def run_hook(
    event: str, data: dict[str, Any], env: dict[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "entity_memory_client.cli", "hook", event, *extra],
        input=json.dumps(data),
        env=env,
        capture_output=True,
        text=True,
        timeout=HOOK_DEADLINE_S,
        cwd=data.get("cwd") or REPO,
    )


def upload_finished_since(env: dict[str, str], since: float) -> bool:
    """The hook's detached upload recorded its outcome (hooks.record_upload_status)."""
    path = Path(env["ENTITY_MEMORY_HOME"]) / "state" / "last-upload.json"
    try:
        return json.loads(path.read_text())["at"] >= since
    except (OSError, ValueError, KeyError):
        return False


def jobs_done(user: str) -> bool:
    """The service has extracted every upload (hooks queue jobs and return)."""
    with EntityMemory(user=user) as mem:
        jobs = mem.jobs()["jobs"]
    return bool(jobs) and all(j["state"] in ("done", "failed") for j in jobs)


def wait_for(check: Callable[[], Any], timeout: float = 40.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout}s: {check}")
        time.sleep(0.25)


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "projects" / "-home-dana-ads-account" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    shutil.copy(FIXTURE, path)
    return path


def _log(env: dict[str, str]) -> str:
    path = Path(env["ENTITY_MEMORY_HOME"]) / "hooks.log"
    return path.read_text() if path.exists() else ""


def test_session_start_prints_the_context(
    env: dict[str, str], user: str, transcript: Path, tmp_path: Path
) -> None:
    with EntityMemory(user=user) as mem:
        mem.upsert(
            [
                {
                    "type": "preference",
                    "name": "Numbers first",
                    "content": "Lead with numbers, short bullets",
                    "importance": 0.9,
                    "metadata": {"category": "reporting", "value": "numbers first"},
                }
            ],
            "seed",
        )
        mem.context("warm up")
    live = {**env, **LIVE_BUDGET}
    done = run_hook(
        "session-start", payload("session-start", transcript, tmp_path), live, "--user", user
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert "<entity_memory>" in out["additionalContext"]
    assert "Numbers first" in out["additionalContext"]

    # The service hangs: within the budget, the context cached by the last answer.
    server = _serve_slowly()
    try:
        slow_env = {**env, "ENTITY_MEMORY_URL": f"http://127.0.0.1:{server.server_address[1]}"}
        done = run_hook(
            "session-start",
            payload("session-start", transcript, tmp_path),
            slow_env,
            "--user",
            user,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0
    cached = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Numbers first" in cached and ", as of " in cached

    # A user with nothing remembered and no MCP server configured: nothing to say at all.
    bare = {**live, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config")}
    done = run_hook(
        "session-start", payload("session-start", transcript, tmp_path), bare, "--user", user + "x"
    )
    assert done.returncode == 0 and done.stdout.strip() == ""
    # With the MCP server in the project's .mcp.json: only the hint that `remember` exists.
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"memory": {"command": "entity-memory-mcp", "args": []}}})
    )
    done = run_hook(
        "session-start", payload("session-start", transcript, tmp_path), bare, "--user", user + "x"
    )
    assert done.returncode == 0
    alone = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "<entity_memory>" not in alone and "`remember`" in alone


def test_session_end_uploads_only_user_and_assistant_text(
    env: dict[str, str], user: str, transcript: Path, tmp_path: Path
) -> None:
    env = {**env, "ENTITY_MEMORY_USER": user}
    began = time.time()
    done = run_hook("session-end", payload("session-end", transcript, tmp_path), env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""

    wait_for(lambda: upload_finished_since(env, began))
    wait_for(lambda: jobs_done(user))
    with EntityMemory(user=user) as mem:
        exported = mem.export()
    stored = json.dumps(exported["entities"])
    assert "Campaign Alpha" in stored
    for word in NOT_CONVERSATION:
        assert word not in stored, word
    # stored under Claude Code's session id
    assert {v["sessionId"] for v in exported["history"]} == {SESSION}
    assert "uploading" in _log(env)

    # Stop after every response: the transcript did not change, so nothing is started.
    uploads = _log(env).count("uploading")
    done = run_hook("stop", payload("stop", transcript, tmp_path), env)
    assert done.returncode == 0
    assert _log(env).count("uploading") == uploads

    # The session grows, but Stop uploads at most once per interval (10 minutes by default).
    with transcript.open("a") as fh:
        fh.write("\n")
    done = run_hook("stop", payload("stop", transcript, tmp_path), env)
    assert done.returncode == 0 and _log(env).count("uploading") == uploads
    env = {**env, "ENTITY_MEMORY_STOP_INTERVAL_MIN": "0"}

    # The session grows: Stop uploads it; the service processes only the new messages.
    with transcript.open("a") as fh:
        line = {
            "type": "user",
            "sessionId": SESSION,
            "uuid": "00000000-0000-4000-8000-000000000099",
            "message": {
                "role": "user",
                "content": "Decided: pause Campaign Bravo because its ROAS fell to 0.8x.",
            },
        }
        fh.write(json.dumps(line) + "\n")
    began = time.time()
    done = run_hook("stop", payload("stop", transcript, tmp_path), env)
    assert done.returncode == 0
    assert _log(env).count("uploading") == uploads + 1
    wait_for(lambda: upload_finished_since(env, began))
    wait_for(lambda: jobs_done(user) and len(EntityMemory(user=user).jobs()["jobs"]) == 2)
    with EntityMemory(user=user) as mem:
        assert "Bravo" in json.dumps(mem.export()["entities"])

    # pre-compact re-sends the same session: the service has it all, nothing changes
    before = EntityMemory(user=user).list()
    began = time.time()
    done = run_hook("pre-compact", payload("pre-compact", transcript, tmp_path), env)
    assert done.returncode == 0
    wait_for(lambda: upload_finished_since(env, began))
    wait_for(lambda: jobs_done(user))
    after = EntityMemory(user=user).list()
    assert after == before


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Sleepy(BaseHTTPRequestHandler):
    def _hang(self) -> None:
        time.sleep(HANG_S)
        self.send_response(200)
        self.end_headers()

    do_GET = do_POST = do_PUT = _hang

    def log_message(self, *args: Any) -> None:
        pass


def _serve_slowly() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sleepy)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def slow_url() -> Iterator[str]:
    server = _serve_slowly()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("service", ["down", "slow"])
def test_every_hook_exits_0_without_waiting_for_the_service(
    service: str, env: dict[str, str], transcript: Path, tmp_path: Path, slow_url: str
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}" if service == "down" else slow_url
    env = {**env, "ENTITY_MEMORY_URL": url, "ENTITY_MEMORY_USER": "nobody"}
    for event in EVENTS:
        done = run_hook(event, payload(event, transcript, tmp_path), env)
        assert done.returncode == 0, (event, done.stderr)
        if event == "session-start":  # no memory, but the agent and user are told why
            notice = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
            assert "<entity_memory>" not in notice and "did not answer" in notice
        else:
            assert done.stdout == "", event  # nothing half-written
    log = _log(env)
    assert "session-start" in log  # the failure is logged
    assert "uploading" in log
    if service == "down":
        # the detached upload ran, failed after its retries, and said so in the log
        wait_for(lambda: "connection_failed" in _log(env), timeout=30)


def test_hooks_never_fail_on_bad_input(env: dict[str, str], tmp_path: Path) -> None:
    cases = [
        ("session-start", "not json"),
        ("session-end", json.dumps({"session_id": SESSION})),
        ("stop", json.dumps({"session_id": SESSION, "transcript_path": str(tmp_path / "none")})),
        ("pre-compact", ""),
    ]
    for event, stdin in cases:
        done = subprocess.run(
            [sys.executable, "-m", "entity_memory_client.cli", "hook", event],
            input=stdin,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0, (event, done.stderr)
        assert done.stdout == ""
    assert "session-start" in _log(env)
