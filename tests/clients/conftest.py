"""Fixtures for the client, CLI, hooks, MCP server and example tests.

ONE real local host (Pyodide + Miniflare) per test session, shared with the browser tests
(`token_host` in tests/conftest.py), with a bearer token, so every request goes through auth.
Each test uses its own user id, so tests share the host without sharing data. Never skipped:
when the host cannot start, the tests using it fail with its output.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.conftest import SHARED_TOKEN
from tests.e2e.hostproc import Host

TOKEN = SHARED_TOKEN
REPO = Path(__file__).resolve().parents[2]
#: The client package of this working tree, ahead of any installed copy (an install that is not
#: editable would otherwise test stale code); subprocesses get it through PYTHONPATH.
CLIENT_SRC = str(REPO / "clients" / "python" / "src")
if sys.path[0] != CLIENT_SRC:
    sys.path.insert(0, CLIENT_SRC)


@pytest.fixture(scope="session")
def host(token_host: Host) -> Host:
    """The session's shared host with auth on (tests/conftest.py)."""
    return token_host


@pytest.fixture
def user() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def em_home(tmp_path: Path) -> Path:
    home = tmp_path / "em-home"
    home.mkdir()
    return home


@pytest.fixture
def env(host: Host, em_home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment a user of the client has: URL, token, a private ENTITY_MEMORY_HOME.
    Also applied to this process, for in-process clients."""
    values = {
        "ENTITY_MEMORY_URL": host.base_url,
        "ENTITY_MEMORY_TOKEN": TOKEN,
        "ENTITY_MEMORY_HOME": str(em_home),
    }
    monkeypatch.delenv("ENTITY_MEMORY_USER", raising=False)
    monkeypatch.delenv("ENTITY_MEMORY_CONFIG", raising=False)
    monkeypatch.delenv("ENTITY_MEMORY_HOOK_LOG", raising=False)
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ENTITY_MEMORY_") and not k.startswith("PYTEST_")
    }
    pythonpath = os.pathsep.join(p for p in (CLIENT_SRC, os.environ.get("PYTHONPATH")) if p)
    return base | values | {"PYTHONPATH": pythonpath}


def run_cli(
    *args: str,
    env: dict[str, str],
    input: str | None = None,
    timeout: float = 60,
    stdin: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """`entity-memory <args>` in a subprocess (python -m, so no PATH lookup)."""
    if CLIENT_SRC not in env.get("PYTHONPATH", ""):
        env = {**env, "PYTHONPATH": CLIENT_SRC}
    return subprocess.run(
        [sys.executable, "-m", "entity_memory_client.cli", *args],
        input=input,
        stdin=(subprocess.DEVNULL if stdin is None else stdin) if input is None else None,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )
