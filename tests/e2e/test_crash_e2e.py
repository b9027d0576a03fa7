"""kill -9 of the whole host under load, then a restart on the same state: every batch a
writer was answered 200 for is in KV at its version, indexed, and in the ledger once
(bench/crash.py at a small size; the bench prints the figures at 1,000 entities)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import pytest
from bench.crash import Service, Tally, check, load

pytestmark = pytest.mark.e2e


def test_nothing_acknowledged_is_lost_when_the_host_is_killed_mid_write(tmp_path: Path) -> None:
    args = argparse.Namespace(writers=3, batches=6, size=4, kills=3, jitter=0.3, seed=3)
    service = Service(tmp_path / "v3")
    service.start()
    tally = Tally()
    try:
        kills = asyncio.run(load(service, tally, args))
        assert kills == 3 and tally.batches_done == 18
        assert service.host is not None
        assert len(tally.acknowledged) == 72
        assert check(service.host, tally) == 0
    finally:
        service.stop()
