"""The one host with auth on that the client, CLI, hooks, MCP and browser tests share.

Starting a host costs seconds (Pyodide, Miniflare, migrations), so tests that need auth share
this one; each uses its own user ids, so they share the host without sharing data.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.hostproc import Host, HostError, start_host

#: The admin token of the shared host (`API_TOKEN`).
SHARED_TOKEN = "shared-e2e-admin-token-0123456789"


@pytest.fixture(scope="session")
def token_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    persist_dir = tmp_path_factory.mktemp("token-host-state") / "v3"
    args = ["--var", f"API_TOKEN={SHARED_TOKEN}", "--var", "ALLOW_CLOCK_OVERRIDE=1"]
    try:
        with start_host(persist_dir, args) as running:
            yield running
    except HostError as exc:
        pytest.fail(str(exc))
