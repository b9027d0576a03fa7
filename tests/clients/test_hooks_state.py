"""Hook bookkeeping without a service: one upload per session at a time, the status notice the
next session start shows, and how a degraded extraction is reported."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from entity_memory_client import cli, hooks


@pytest.fixture(autouse=True)
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENTITY_MEMORY_HOME", str(tmp_path))


def test_uploads_of_one_session_never_overlap() -> None:
    inside: list[int] = []
    overlaps: list[bool] = []

    def upload() -> None:
        with hooks.upload_lock("s1", wait_s=30):
            inside.append(1)
            overlaps.append(len(inside) > 1)
            time.sleep(0.05)
            inside.pop()

    threads = [threading.Thread(target=upload) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == [False] * 4


def test_a_held_lock_times_out_and_other_sessions_are_free() -> None:
    with hooks.upload_lock("s1"):
        with pytest.raises(TimeoutError), hooks.upload_lock("s1", wait_s=0):
            pass
        with hooks.upload_lock("s2", wait_s=0):
            pass


def test_failed_and_degraded_uploads_become_one_line_notices() -> None:
    assert hooks.upload_notices() == []
    hooks.record_upload_status([{"error": {"code": "connection_failed", "message": "refused"}}])
    [notice] = hooks.upload_notices()
    assert "failed" in notice and "connection_failed" in notice
    hooks.record_upload_status([{"degraded": True, "degradedReason": "workers-ai: 3040"}])
    [notice] = hooks.upload_notices()
    assert "degraded" in notice and "3040" in notice
    hooks.record_upload_status([{"processed": True}])
    assert hooks.upload_notices() == []


def test_the_cli_summary_says_degraded_and_pending() -> None:
    result = {
        "processed": False,
        "extractor": "workers-ai",
        "degraded": True,
        "degradedReason": "workers-ai: HTTP 429",
        "pending": True,
        "results": [],
    }
    summary = cli._extract_summary("-", "s1", {**result, "processed": True})
    assert "DEGRADED" in summary and "429" in summary and "retried" in summary
    assert "DEGRADED" in cli._extract_summary("-", "s1", result)
    assert "fallback" in cli.degraded_reason({"fallbackReason": "fallback: old server"})
