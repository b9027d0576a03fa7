"""Inputs a new user meets before reading the code: the per-message limit and the clock
override behave as docs/api.md says, and it says them with the values the code uses."""

from __future__ import annotations

from pathlib import Path

import httpx

from entity_memory.domain.limits import MAX_MESSAGE_CHARS
from entity_memory.http.app import create_app
from entity_memory.http.deps import CLOCK_HEADER
from entity_memory.service.bindings import Bindings
from entity_memory.settings import EnvVar, Settings
from entity_memory.storage.kv import InMemoryKV

API_DOC = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()


def _client(settings: Settings) -> httpx.AsyncClient:
    app = create_app(lambda env: Bindings(kv=InMemoryKV(), settings=settings))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


def test_the_message_limit_is_documented_with_its_value() -> None:
    assert f"{MAX_MESSAGE_CHARS:,} characters per message" in " ".join(API_DOC.split())


async def test_a_message_over_the_limit_is_refused_naming_it() -> None:
    over = [
        {"role": "user", "content": "a"},
        {"role": "user", "content": "x" * (MAX_MESSAGE_CHARS + 1)},
    ]
    async with _client(Settings()) as c:
        r = await c.post("/v1/users/ann/sessions/s1/extract", json={"messages": over})
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"
    assert r.json()["error"]["details"][0]["loc"] == ["messages", 1, "content"]


def test_the_clock_override_is_documented_with_its_var_header_and_formats() -> None:
    assert EnvVar.ALLOW_CLOCK_OVERRIDE.value in API_DOC
    assert CLOCK_HEADER.lower() in API_DOC.lower()
    assert "invalid_clock" in API_DOC


async def test_the_clock_override_reads_each_documented_format_only_when_allowed() -> None:
    async with _client(Settings(allow_clock_override=True)) as c:
        for value in ("1767607200000", "2026-01-05T10:00:00Z", "2026-01-05"):
            r = await c.post(
                "/v1/users/ann/context", json={"task": "t"}, headers={CLOCK_HEADER: value}
            )
            assert r.status_code == 200, (value, r.text)
        bad = await c.post(
            "/v1/users/ann/context", json={"task": "t"}, headers={CLOCK_HEADER: "soon"}
        )
        assert (bad.status_code, bad.json()["error"]["code"]) == (400, "invalid_clock")
    async with _client(Settings()) as c:  # not allowed: the header is ignored
        r = await c.post(
            "/v1/users/ann/context", json={"task": "t"}, headers={CLOCK_HEADER: "soon"}
        )
        assert r.status_code == 200
