"""End-to-end fixtures: the real local host (Pyodide + Miniflare) in a subprocess.

The `host` fixture starts `node local/host.mjs` once per test session on a free port, with its
own Miniflare state directory, and stops it afterwards. When the host cannot start, every test
using it fails with the host's output. These tests are never skipped.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .hostproc import Host, host_for_tests

__all__ = ["Host"]


@pytest.fixture(scope="session")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    # Clock override: the extraction tests replay dated sessions of the evaluation set.
    yield from host_for_tests(tmp_path_factory, "wrangler-state", "--var", "ALLOW_CLOCK_OVERRIDE=1")
