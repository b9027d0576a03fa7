"""Failures heal by themselves on the local host: its timer runs the Worker's scheduled()
as the cron does in production, and a re-sent session that is still pending is retried at
once. The LLM is a local OpenAI-compatible replay server (tests/unit/llm_replay_server.py):
one scripted failure, then a reply; what is asserted is the state, never how long it took."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.unit.llm_replay_server import ReplayServer, completion, error

from .hostproc import Host, start_host

#: A ceiling for a state to be reached on a busy machine, not a measurement.
SETTLE_S = 180
REPLY = {
    "entities": [
        {
            "type": "campaign",
            "name": "Harbor Tours",
            "content": "Harbor Tours runs on a $30 daily budget.",
            "importance": 0.7,
            "metadata": {"budget": 30},
            "source": "harbor tours runs on a $30 daily budget",
        }
    ]
}
TALK = [{"role": "user", "content": "harbor tours runs on a $30 daily budget"}]


@pytest.fixture(scope="module")
def healing_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Host, ReplayServer]]:
    server = ReplayServer().start()
    args = [
        "--var", "ALLOW_CLOCK_OVERRIDE=1",
        "--var", f"LLM_BASE_URL={server.base_url}",
        "--var", "LLM_MODEL=replay-model",
        "--var", "LLM_ATTEMPTS=1",
        # The host's cron timer, every second instead of wrangler.toml's half hour.
        "--cron-every", "1",
    ]  # fmt: skip
    try:
        with start_host(tmp_path_factory.mktemp("wrangler-heal") / "v3", args) as running:
            yield running, server
    finally:
        server.stop()


def _until(what: str, probe: Any) -> Any:
    deadline = time.monotonic() + SETTLE_S
    while (value := probe()) is None or value is False:
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.5)
    return value


def _fail_once_then_answer(healing_host: tuple[Host, ReplayServer]) -> Host:
    """The model's next call fails (the session is degraded) and the one after it answers."""
    host, server = healing_host
    server.reset()
    server.queue(error(503, "overloaded", type_="server_error"), completion(json.dumps(REPLY)))
    return host


def test_a_degraded_session_is_retried_by_the_host_without_any_call(
    healing_host: tuple[Host, ReplayServer],
) -> None:
    # The first call fails; the next one, which only the host's cron can make, succeeds.
    host = _fail_once_then_answer(healing_host)
    with httpx.Client(base_url=host.base_url, timeout=120) as c:
        # Dated in the past: its retry is already due when the timer next fires.
        r = c.post(
            "/v1/users/heal/sessions/s1/extract?wait=true",
            json={"messages": TALK},
            headers={"X-Entity-Memory-Now": "2026-01-05T10:00:00Z"},
        )
        body = r.json()
        assert (body["degraded"], body["pending"]) == (True, True), body
        job = body["job"]["id"]

        def healed() -> bool:
            # The retry's ledger rows, its entity and its job's state land in turn: all three.
            rows = host.d1("SELECT COUNT(*) AS n FROM pending_sessions WHERE session_id = 's1'")
            names = {e["name"] for e in c.get("/v1/users/heal/entities").json()["entities"]}
            view = c.get(f"/v1/users/heal/jobs/{job}").json()
            return rows == [{"n": 0}] and "Harbor Tours" in names and view["pending"] is False

        _until("the host's cron retried the pending session", healed)
        # The job no longer says something is pending, nor does its result.
        view = c.get(f"/v1/users/heal/jobs/{job}").json()
        assert view["result"]["pending"] is False
    assert healing_host[1].pending == 0


def test_resending_a_pending_session_retries_it_now(
    healing_host: tuple[Host, ReplayServer],
) -> None:
    host = _fail_once_then_answer(healing_host)
    with httpx.Client(base_url=host.base_url, timeout=120) as c:
        # Dated now: its scheduled retry is minutes away, so only the re-send can retry it.
        first = c.post("/v1/users/resend/sessions/s1/extract?wait=true", json={"messages": TALK})
        assert (first.json()["degraded"], first.json()["pending"]) == (True, True), first.text
        again = c.post("/v1/users/resend/sessions/s1/extract?wait=true", json={"messages": TALK})
        body = again.json()
        assert again.status_code == 200, body
        assert body["job"]["resent"] is True
        assert (body["pending"], body["degraded"]) == (False, False), body
        assert "Harbor Tours" in {e["name"] for e in body["entities"]}
    assert host.d1("SELECT COUNT(*) AS n FROM pending_sessions WHERE user_id = 'resend'") == [
        {"n": 0}
    ]
