"""The Python client against the real local host: every endpoint, sync and async, and the API's
error codes as typed exceptions. Retries and Retry-After against a scripted transport."""

from __future__ import annotations

import socket
import time
from typing import Any

import httpx
import pytest
from entity_memory_client import (
    AsyncEntityMemory,
    ConnectionFailed,
    EntityMemory,
    EntityMemoryError,
    InvalidId,
    InvalidRequest,
    InvalidType,
    NotFound,
    RateLimited,
    ServerError,
    TooLarge,
    Unauthorized,
)

from tests.e2e.hostproc import Host

from .conftest import TOKEN

pytestmark = pytest.mark.e2e

ALPHA = {
    "type": "campaign",
    "name": "Campaign Alpha",
    "content": "Search campaign; target CPA $40",
    "importance": 0.8,
    "metadata": {"strategy": "target CPA", "budget": 150, "status": "enabled"},
}
PREF = {
    "type": "preference",
    "name": "Numbers first",
    "content": "Lead with numbers, short bullets",
    "importance": 0.9,
    "metadata": {"category": "reporting", "value": "numbers first", "confidence": 0.9},
}


def test_every_endpoint_sync(env: dict[str, str], user: str) -> None:
    with EntityMemory(user=user) as mem:  # URL and token from the environment
        assert mem.health()["status"] == "ok"
        started = int(time.time() * 1000) - 1
        up = mem.upsert([ALPHA, PREF], "s1")
        assert [r["status"] for r in up["results"]] == ["created", "created"]
        alpha_id = up["results"][0]["id"]

        listed = mem.list()
        assert listed["count"] == 2
        assert {e["id"] for e in mem.list("preference")["entities"]} == {up["results"][1]["id"]}

        got = mem.get("campaign", alpha_id)
        assert got["name"] == "Campaign Alpha" and got["version"] == 1

        changed = {**ALPHA, "content": "Search campaign; target CPA $35", "id": alpha_id}
        assert mem.upsert([changed], "s2")["results"][0]["version"] == 2
        versions = mem.history("campaign", alpha_id)["versions"]
        assert [v["version"] for v in versions] == [2, 1]

        changes = mem.changes(started)
        assert changes["count"] == 2 and {e["id"] for e in changes["entities"]} >= {alpha_id}

        trends = mem.trends()
        assert set(trends) == {"metrics", "painPoints"}

        ctx = mem.context("Campaign Alpha bids", explain=True)
        assert ctx["context"].startswith("<entity_memory>") and "Campaign Alpha" in ctx["context"]
        assert "scores" in ctx and ctx["entities"]

        exported = mem.export()
        assert exported["userId"] == user and len(exported["entities"]) == 2
        assert mem.reindex() is not None

        assert mem.delete("campaign", alpha_id)["deleted"] == {"type": "campaign", "id": alpha_id}
        with pytest.raises(NotFound):
            mem.get("campaign", alpha_id)

        forgot = mem.forget_user()
        assert forgot["complete"] is True
        assert mem.list()["count"] == 0


async def test_every_endpoint_async(env: dict[str, str], user: str) -> None:
    async with AsyncEntityMemory(user=user) as mem:
        assert (await mem.health())["status"] == "ok"
        up = await mem.upsert([ALPHA], "s1")
        entity_id = up["results"][0]["id"]
        assert (await mem.list())["count"] == 1
        assert (await mem.get("campaign", entity_id))["id"] == entity_id
        assert (await mem.history("campaign", entity_id))["versions"][0]["version"] == 1
        assert (await mem.changes(0))["count"] == 1
        assert "metrics" in await mem.trends()
        assert "Campaign Alpha" in (await mem.context("alpha"))["context"]
        assert (await mem.export())["userId"] == user
        await mem.reindex()
        await mem.delete("campaign", entity_id)
        with pytest.raises(NotFound) as info:
            await mem.delete("campaign", entity_id)
        assert info.value.code == "not_found" and info.value.status == 404
        assert (await mem.forget_user())["complete"] is True


def test_error_codes_become_typed_exceptions(env: dict[str, str], user: str, host: Host) -> None:
    with EntityMemory(user=user) as mem:
        cases: list[tuple[Any, type[EntityMemoryError], str, int | None]] = [
            (lambda: mem.get("campaign", "nope"), NotFound, "not_found", 404),
            # Refused before any request (tests/clients/test_client_ids.py): no status.
            (lambda: mem.get("campaign", "bad id!"), InvalidId, "invalid_id", None),
            (lambda: mem.list("nonsense"), InvalidType, "invalid_type", 400),
            (
                lambda: mem.upsert([{"type": "campaign"}], "s1"),
                InvalidRequest,
                "invalid_entity",
                422,
            ),
            (lambda: mem.upsert([ALPHA] * 101, "s1"), TooLarge, "too_large", 413),
            (lambda: mem.history("campaign", "never"), NotFound, "not_found", 404),
        ]
        for call, cls, code, status in cases:
            with pytest.raises(cls) as info:
                call()
            assert (info.value.code, info.value.status) == (code, status)
            assert isinstance(info.value, EntityMemoryError) and info.value.message

    with EntityMemory(host.base_url, "wrong-token", user=user) as bad:
        with pytest.raises(Unauthorized) as info:
            bad.list()
        assert info.value.code == "unauthorized" and info.value.status == 401


def test_connection_errors_are_retried_then_raised() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with EntityMemory(f"http://127.0.0.1:{port}", user="u", max_retries=2, backoff=0.01) as mem:
        began = time.monotonic()
        with pytest.raises(ConnectionFailed) as info:
            mem.list()
        assert info.value.code == "connection_failed" and info.value.status is None
        assert time.monotonic() - began < 5


def _scripted(responses: list[httpx.Response], seen: list[float]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(time.monotonic())
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        return responses.pop(0)

    return httpx.MockTransport(handler)


def test_retries_429_and_5xx_honouring_retry_after() -> None:
    busy = {"error": {"code": "rate_limited", "message": "slow down"}}
    seen: list[float] = []
    transport = _scripted(
        [
            httpx.Response(429, json=busy, headers={"Retry-After": "0.3"}),
            httpx.Response(503, json={"error": {"code": "internal", "message": "x"}}),
            httpx.Response(200, json={"entities": [], "count": 0}),
        ],
        seen,
    )
    with EntityMemory(
        "http://memory.test", TOKEN, user="u", backoff=0.01, transport=transport
    ) as mem:
        assert mem.list() == {"entities": [], "count": 0}
    assert len(seen) == 3
    assert seen[1] - seen[0] >= 0.29  # waited what Retry-After said

    seen.clear()
    transport = _scripted([httpx.Response(429, json=busy)] * 3, seen)
    with (
        EntityMemory(
            "http://memory.test", TOKEN, user="u", max_retries=2, backoff=0.01, transport=transport
        ) as mem,
        pytest.raises(RateLimited) as info,
    ):
        mem.list()
    assert len(seen) == 3 and info.value.status == 429

    seen.clear()
    transport = _scripted([httpx.Response(502, text="bad gateway")] * 2, seen)
    with (
        EntityMemory(
            "http://memory.test", TOKEN, user="u", max_retries=1, backoff=0.01, transport=transport
        ) as mem,
        pytest.raises(ServerError) as info,
    ):
        mem.list()
    assert info.value.status == 502 and info.value.code == "http_502"


def test_base_url_and_token_from_arguments_win_over_env(
    env: dict[str, str], host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENTITY_MEMORY_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("ENTITY_MEMORY_TOKEN", "wrong")
    with EntityMemory(host.base_url + "/", TOKEN, user="someone") as mem:
        assert mem.base_url == host.base_url
        assert mem.list()["count"] == 0
